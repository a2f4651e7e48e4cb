# make bench: runs bench_topo with repetitions, then bench_report's median/ratio table, then bench_catalog, then
# bench_plan, then bench_sif, then bench_simulate, then bench_rescale.
# Usage: sh report.sh BUILD_DIR
set -eu

if [ $# -ne 1 ]; then
    echo "usage: sh tests/perf/report.sh BUILD_DIR" >&2
    exit 2
fi
build=$1
bench_topo=$build/tests/perf/bench_topo
bench_report=$build/tests/perf/bench_report
for tool in "$bench_topo" "$bench_report"; do
    if [ ! -x "$tool" ]; then
        echo "report.sh: error: $tool is missing (is libbenchmark-dev installed? try: make deps build)" >&2
        exit 69
    fi
done
bench_catalog=$build/tests/perf/bench_catalog
bench_plan=$build/tests/perf/bench_plan
bench_sif=$build/tests/perf/bench_sif
bench_simulate=$build/tests/perf/bench_simulate
bench_rescale=$build/tests/perf/bench_rescale
for tool in "$bench_catalog" "$bench_plan" "$bench_sif" "$bench_simulate" "$bench_rescale"; do
    if [ ! -x "$tool" ]; then
        echo "report.sh: error: $tool is missing (try: make build)" >&2
        exit 69
    fi
done

out=$build/bench
mkdir -p "$out"
raw=$out/bench-topo.json
log=$out/bench-topo.log
report=$out/bench-report.json

# Repetitions are randomly interleaved so that slow drift on a noisy machine hits ours and the baseline alike.
repetitions=${GPUOPS_BENCH_REPETITIONS:-5}
min_time=${GPUOPS_BENCH_MIN_TIME:-0.05}
echo "report.sh: running bench_topo ($repetitions repetitions of at least ${min_time}s per benchmark; log in $log)" >&2
if ! "$bench_topo" --benchmark_repetitions="$repetitions" \
        --benchmark_min_time="$min_time" \
        --benchmark_enable_random_interleaving=true \
        --benchmark_report_aggregates_only=false \
        --benchmark_out="$raw" --benchmark_out_format=json >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "report.sh: error: bench_topo failed; see $log" >&2
    exit 1
fi

"$bench_report" --json "$report" "$raw"
echo "Raw Google Benchmark output: $raw"

# The catalog rows: whole builds of seconds each, timed by bench_catalog itself (a missed target prints FAIL).
catalog_report=$out/bench-catalog.json
echo ""
echo "report.sh: running bench_catalog (${GPUOPS_BENCH_CATALOG_REPETITIONS:-3} builds per platform)" >&2
"$bench_catalog" --json "$catalog_report"

# The planner rows: modelled time, efficiency and speedups per platform and demand, then planning latency; a
# plan whose planning and model run past GPUOPS_BENCH_PLAN_BUDGET_S seconds (default 60) is skipped, not waited for.
plan_report=$out/bench-plan.json
echo ""
echo "report.sh: running bench_plan (budget ${GPUOPS_BENCH_PLAN_BUDGET_S:-60}s per plan; about 5 minutes)" >&2
"$bench_plan" --json "$plan_report"

# The sif-score rows: parse, validate, score and write on 10,000-node states (median of repeated runs) beside
# parsing alone; a row over 50 ms, or whose phi_star is not exact, prints FAIL.
sif_report=$out/bench-sif.json
echo ""
echo "report.sh: running bench_sif (${GPUOPS_BENCH_SIF_REPETITIONS:-21} runs per state)" >&2
"$bench_sif" --json "$sif_report" --repetitions "${GPUOPS_BENCH_SIF_REPETITIONS:-21}"

# The simulator rows: whole real traces (10 ITP clusters, openb, Tiresias) under every policy on eta-sized clusters
# (AFR, AJCT, AGU, migrations per job, median replay time); all ITP jobs under compass past 5 s prints FAIL.
# Without the traces (GPUOPS_EXTERNAL_DATA) it prints a skip line.
simulate_report=$out/bench-simulate.json
echo ""
echo "report.sh: running bench_simulate (${GPUOPS_BENCH_SIMULATE_REPETITIONS:-5} replays per trace and policy)" >&2
"$bench_simulate" --json "$simulate_report" --repetitions "${GPUOPS_BENCH_SIMULATE_REPETITIONS:-5}"

# The rescale-coord rows: rescale latency p50/p99 and the coordinator's share for N = 4..256 workers on loopback, and
# the bootstrap of 1024 workers; a missed target prints FAIL.
rescale_report=$out/bench-rescale.json
echo ""
echo "report.sh: running bench_rescale (about a minute)" >&2
"$bench_rescale" --json "$rescale_report"
