#!/bin/sh
# make demo: the gpuops pipeline on the embedded default topology (grows as tools land).
set -eu
bin=${1:-build}/tools
echo "== vp-probe --preset pcie-8gpu-gen4 --format text"
"$bin/vp-probe" --preset pcie-8gpu-gen4 --format text
echo
echo "== vp-probe --preset pcie-8gpu-gen4 --hosts 'gpu[01-04]' --fabric rail:200Gb/s (summary of the JSON)"
"$bin/vp-probe" --preset pcie-8gpu-gen4 --hosts 'gpu[01-04]' --fabric rail:200Gb/s --compact \
  | grep -o '"summary":{[^}]*}'
echo
echo "== vp-probe --preset pcie-8gpu-gen4 --hosts gpu01 --format gres-conf"
"$bin/vp-probe" --preset pcie-8gpu-gen4 --hosts gpu01 --format gres-conf
echo
echo "== vp-probe --preset pcie-8gpu-gen4 | vp-catalog --format text"
"$bin/vp-probe" --preset pcie-8gpu-gen4 | "$bin/vp-catalog" -q --format text
echo
echo "== vp-probe --preset pcie-8gpu-gen4 --nodes 4 --fabric rail:200Gb/s | vp-catalog --format text (summary)"
"$bin/vp-probe" --preset pcie-8gpu-gen4 --nodes 4 --fabric rail:200Gb/s | "$bin/vp-catalog" -q --format text \
  | sed -n '1,/build time/p'
echo
moe=moe:experts=64,topk=8,tokens=4096,hidden=7168,dtype=bf16,zipf=1.2
echo "== vp-plan --catalog catalog.json --demand $moe --algo variopath|direct --format text (summaries)"
catalog=$(mktemp)
trap 'rm -f "$catalog"' EXIT
"$bin/vp-probe" --preset pcie-8gpu-gen4 | "$bin/vp-catalog" -q -o "$catalog"
for algo in variopath direct; do
  "$bin/vp-plan" -q --catalog "$catalog" --demand "$moe" --algo "$algo" --format text | head -5
done
echo
echo "== the same on 2 nodes (rail fabric): VarioPath node level first, against FAST (summaries)"
"$bin/vp-probe" --preset pcie-8gpu-gen4 --nodes 2 --fabric rail | "$bin/vp-catalog" -q -o "$catalog"
for algo in variopath fast; do
  "$bin/vp-plan" -q --catalog "$catalog" --demand "$moe" --algo "$algo" --format text | head -5
done
echo
echo "== sif-score --format text share/gpuops/examples/cluster-state-small.json"
examples=$(dirname "$0")/examples
"$bin/sif-score" --format text "$examples/cluster-state-small.json"
echo
echo "== compass-place --state share/gpuops/examples/cluster-state-small.json --instances 2 --gpus 4 --format text"
"$bin/compass-place" --state "$examples/cluster-state-small.json" --instances 2 --gpus 4 --format text
echo
echo "== compass-place simulate --trace share/gpuops/examples/trace-mixed.csv --format text --plot replay.svg"
plot=$(mktemp --suffix=.svg)
trap 'rm -f "$catalog" "$plot"' EXIT
"$bin/compass-place" simulate --trace "$examples/trace-mixed.csv" --format text --plot "$plot"
echo "(plot of N*SIF and GPU utilisation per policy: $(wc -c <"$plot") bytes of SVG; see README.md)"
echo
echo "== rescale-coord: a coordinator, 4 reference workers, a shrink of 1 and a close (port from --port-file)"
job=$(mktemp -d)
trap 'rm -f "$catalog" "$plot"; rm -rf "$job"' EXIT
( umask 077; echo "demo-token" > "$job/token" )
"$bin/rescale-coord" serve -q --listen 127.0.0.1:0 --db "$job/coord.db" --job demo --token-file "$job/token" \
  --port-file "$job/port" --min 2 &
coord_pid=$!
for _ in $(seq 100); do [ -s "$job/port" ] && break; sleep 0.05; done
coord=127.0.0.1:$(cat "$job/port")
for i in 0 1 2 3; do
  "$bin/rescale-coord" worker --coord "$coord" --token-file "$job/token" --id "w$i" > "$job/w$i.jsonl" &
done
for _ in $(seq 100); do
  [ "$(cat "$job"/w*.jsonl 2>/dev/null | grep -c '"size":4')" = 4 ] && break; sleep 0.05
done
"$bin/rescale-coord" shrink --coord "$coord" --token-file "$job/token" --count 1 --format text | head -1
for _ in $(seq 100); do
  [ "$(cat "$job"/w*.jsonl | grep -c '"size":3')" = 3 ] && break; sleep 0.05
done
"$bin/rescale-coord" status --coord "$coord" --token-file "$job/token" --format text
"$bin/rescale-coord" close --coord "$coord" --token-file "$job/token" > /dev/null
wait
echo "worker w0's events:"
cat "$job/w0.jsonl"
