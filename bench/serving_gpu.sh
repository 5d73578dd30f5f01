#!/usr/bin/env bash
# Serving figures on a rented GPU machine, in one bounded command (about 5 minutes):
#   bash bench/serving_gpu.sh                    # writes $OUT/serving.json and $OUT/serving.md
#   bash bench/serving_gpu.sh --quick --device cpu   # the same path on CPU, in seconds
# Extra arguments go to bench/serving_gpu.py (--budget-s, --price-per-hour, --price-label, ...).
# Needs a python3 with torch (CUDA build for GPUs); nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/serving-out}"
mkdir -p "$OUT"

PY=""
for cand in "${PYTHON:-}" python3 /opt/conda/bin/python /usr/bin/python3; do
  [ -n "$cand" ] || continue
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import torch' >/dev/null 2>&1; then PY="$cand"; break; fi
done
if [ -z "$PY" ]; then
  echo "serving_gpu: no python3 with torch here (tried \$PYTHON, python3, /opt/conda/bin/python, /usr/bin/python3)." >&2
  echo "serving_gpu: install a CUDA build of torch (pip install torch) or set PYTHON=/path/to/python." >&2
  python3 -c 'import torch' 2>&1 | tail -1 >&2 || true
  exit 3
fi

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/nvidia-smi.csv" 2>/dev/null || true
# hard stop inside a 9-minute slot: the suite keeps its own budget (--budget-s, 240 s), this
# catches a hang; every finished point is also in serving.log ("serving point" lines)
PYTHONPATH="$PWD/plugins" timeout 480 "$PY" bench/serving_gpu.py --out "$OUT" "$@" 2>&1 | tee "$OUT/serving.log"
exit "${PIPESTATUS[0]}"
