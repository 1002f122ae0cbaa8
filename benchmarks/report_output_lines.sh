#!/usr/bin/env bash
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Lines of terminal output per play (discover, validate, check_pod) on a simulated fleet of N hosts,
# with the default stdout callback and with numaguard.kubelet.compact: the figure an operator scrolls
# through. Prints one line per playbook and callback.
# Usage: bash benchmarks/report_output_lines.sh [HOSTS] [COLLECTION_TREE]   (needs root: the fleet)
#   COLLECTION_TREE defaults to this checkout; pass an exported older tree to measure "before".
#   KEEP_OUTPUT=DIR copies each play's output (<play>-<HOSTS>.out) into DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
hosts=${1:-12}
tree=${2:-$repo}
work=$(mktemp -d /tmp/numaguard-lines.XXXXXX)
cleanup() {
    "$repo/.venv/bin/python" "$repo/tests/fleet/fleet.py" down --dir "$work/fleet" >/dev/null 2>&1 || true
    if [ -n "${KEEP_OUTPUT:-}" ]; then
        mkdir -p "$KEEP_OUTPUT"
        for f in "$work"/*.out; do [ -e "$f" ] && cp "$f" "$KEEP_OUTPUT/$(basename "$f" .out)-$hosts.out"; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT
.venv/bin/python tests/fleet/fleet.py up --dir "$work/fleet" --base-port auto --hosts "$hosts" >/dev/null
.venv/bin/python tests/fleet/playbook_runs.py collections "$work" "$tree" >/dev/null
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_PIPELINING=1 ANSIBLE_FORKS=10 \
    ANSIBLE_HOST_KEY_CHECKING=0 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_NOCOLOR=1
.venv/bin/python tests/fleet/playbook_runs.py pod db >"$work/pod.yaml"
cd "$work"
callbacks=${CALLBACKS:-default numaguard.kubelet.compact}
for play in discover validate check_pod; do
    extra=()
    [ "$play" = check_pod ] && extra=(-e pod_file=pod.yaml)
    [ "$play" = validate ] && extra=(-e validate_fail=false)
    for callback in $callbacks; do
        [ "$callback" = default ] && out=$play || out=$play-${callback##*.}
        [ -e "$tree/plugins/callback/${callback##*.}.py" ] || [ "$callback" = default ] || continue
        ANSIBLE_STDOUT_CALLBACK=$callback "$repo/.venv/bin/ansible-playbook" -i "$work/fleet/inventory.yml" \
            "$tree/playbooks/$play.yml" "${extra[@]}" >"$work/$out.out" 2>&1 || true
        printf '%-10s hosts=%-4s callback=%-26s lines=%s\n' "$play" "$hosts" "$callback" "$(wc -l <"$work/$out.out")"
    done
done
