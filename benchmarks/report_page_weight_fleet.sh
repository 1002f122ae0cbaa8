#!/usr/bin/env bash
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Page weight of the HTML report, size of the JSON and lines on the screen (numaguard.kubelet.compact) of
# REAL playbook output: discover.yml, validate.yml and check_pod.yml on a simulated fleet of N hosts
# (default 48) cycling through six bundled classes, with every seventh host an intel-2s without 1Gi pages (outliers
# of its inventory group). At most 50 hosts on a shared 2-core machine; benchmarks/report_page_weight.py
# gives the same figures at 400 hosts from synthetic host data. Prints one line per playbook.
# Usage: bash benchmarks/report_page_weight_fleet.sh [HOSTS]   (needs root: the fleet)
#   KEEP_OUTPUT=DIR copies the reports and the play output into DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
hosts=${1:-48}
work=$(mktemp -d /tmp/numaguard-weight.XXXXXX)
cleanup() {
    "$repo/.venv/bin/python" "$repo/tests/fleet/fleet.py" down --dir "$work/fleet" >/dev/null 2>&1 || true
    if [ -n "${KEEP_OUTPUT:-}" ]; then
        mkdir -p "$KEEP_OUTPUT"
        cp "$work"/*.html "$work"/*.json "$work"/*.out "$KEEP_OUTPUT/" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
classes=intel-2s,amd-epyc-nps4,cxl-memory,gpu-sriov,vm-single,sparse-ids
.venv/bin/python tests/fleet/fleet.py up --dir "$work/fleet" --base-port auto --hosts "$hosts" \
    --topologies "$classes,intel-2s:1Gi=0@intel_2s" >/dev/null
.venv/bin/python tests/fleet/playbook_runs.py collections "$work" >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_PIPELINING=1 ANSIBLE_FORKS=10 \
    ANSIBLE_HOST_KEY_CHECKING=0 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_NOCOLOR=1 \
    ANSIBLE_STDOUT_CALLBACK=numaguard.kubelet.compact
.venv/bin/python tests/fleet/playbook_runs.py pod db >"$work/pod.yaml"
cd "$work"
echo "REAL playbook output: $hosts simulated hosts of $(echo "$classes" | tr ',' '\n' | wc -l) bundled classes, every 7th host an intel-2s without 1Gi pages"
for play in discover validate check_pod; do
    extra=(-e "${play}_html_file=$work/$play.html")
    case $play in
        discover) extra+=(-e "discover_report_file=$work/$play.json") ;;
        validate) extra+=(-e "validate_report_file=$work/$play.json" -e validate_fail=false) ;;
        check_pod) extra+=(-e "check_pod_report_file=$work/$play.json" -e pod_file=pod.yaml) ;;
    esac
    start=$(date +%s)
    "$repo/.venv/bin/ansible-playbook" -i "$work/fleet/inventory.yml" "$repo/playbooks/$play.yml" "${extra[@]}" \
        >"$work/$play.out" 2>&1 || true
    printf '%-10s hosts=%-4s html=%7.1f KB json=%7.1f KB screen_lines=%-4s answers=%-3s warnings=%-3s (%d s)\n' "$play" "$hosts" \
        "$(echo "scale=1; $(stat -c %s "$work/$play.html") / 1000" | bc)" \
        "$(echo "scale=1; $(stat -c %s "$work/$play.json") / 1000" | bc)" "$(wc -l <"$work/$play.out")" \
        "$("$repo/.venv/bin/python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["answers"]))' "$work/$play.json")" \
        "$("$repo/.venv/bin/python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["warnings"]))' "$work/$play.json")" \
        $(( $(date +%s) - start ))
done
