#!/usr/bin/env bash
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
# Lines of terminal output per play (discover, validate, check_pod) on a simulated fleet of N hosts,
# with the default callback: the figure an operator scrolls through. Prints one line per playbook.
# Usage: bash benchmarks/report_output_lines.sh [HOSTS] [COLLECTION_TREE]   (needs root: the fleet)
#   COLLECTION_TREE defaults to this checkout; pass an exported older tree to measure "before".
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
hosts=${1:-12}
tree=${2:-$repo}
work=$(mktemp -d /tmp/numaguard-lines.XXXXXX)
cleanup() { "$repo/.venv/bin/python" "$repo/tests/fleet/fleet.py" down --dir "$work/fleet" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT
.venv/bin/python tests/fleet/fleet.py up --dir "$work/fleet" --base-port auto --hosts "$hosts" >/dev/null
mkdir -p "$work/collections/ansible_collections/numaguard"
ln -s "$tree" "$work/collections/ansible_collections/numaguard/kubelet"
export ANSIBLE_COLLECTIONS_PATH=$work/collections ANSIBLE_PIPELINING=1 ANSIBLE_FORKS=10 \
    ANSIBLE_HOST_KEY_CHECKING=0 ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_NOCOLOR=1
cat > "$work/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: shop}
spec:
  containers:
    - name: postgres
      image: postgres:16
      resources:
        requests: {cpu: "8", memory: 40Gi, hugepages-1Gi: 4Gi}
        limits: {cpu: "8", memory: 40Gi, hugepages-1Gi: 4Gi}
EOF
cd "$work"
for play in discover validate check_pod; do
    extra=()
    [ "$play" = check_pod ] && extra=(-e pod_file=pod.yaml)
    [ "$play" = validate ] && extra=(-e validate_fail=false)
    "$repo/.venv/bin/ansible-playbook" -i "$work/fleet/inventory.yml" \
        "$tree/playbooks/$play.yml" "${extra[@]}" >"$work/$play.out" 2>&1 || true
    printf '%-10s hosts=%-4s lines=%s\n' "$play" "$hosts" "$(wc -l <"$work/$play.out")"
done
