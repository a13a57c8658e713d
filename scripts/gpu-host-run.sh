#!/usr/bin/env bash
# Run a playbook of this checkout on the GPU host itself: the collection's files/gpu-host-run.sh, which
# an installed collection has too (its usage: files/gpu-host-run.sh without arguments; docs/development.md).
#
# Usage: scripts/gpu-host-run.sh PLAYBOOK [ansible-playbook arguments...]
exec "$(dirname "${BASH_SOURCE[0]}")/../files/gpu-host-run.sh" "$@"
