#!/usr/bin/env bash
# One host vs two simulated hosts: all_to_all_single and all_reduce at 1 and 16 MiB per rank.
# Same exit statuses as run.sh (77: SKIPPED, the machine does not allow the simulated cluster).
set -euo pipefail
exec bash "$(dirname "${BASH_SOURCE[0]}")/run.sh" --bench "$@"
