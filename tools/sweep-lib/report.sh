# shellcheck shell=bash
# report.sh - aggregates a sweep directory: runs.csv, summary.md and the
# plots, from the finished runs' metrics files alone, so it can be redone
# at any time (tools/sweep --report DIR). Sourced by tools/sweep.

# shellcheck source-path=SCRIPTDIR source=plot.sh
source "$LIB/plot.sh"

# Writes $2 from stdin through a temporary name: a report is never half
# written.
write_atomically() {
  cat >"$1.tmp"
  mv "$1.tmp" "$1"
}

report() {
  local dir=$1 plots=$2 d
  local -a metrics=() unfinished=()
  for d in "$dir"/runs/*/; do
    d=${d%/}
    if [[ -f $d/done ]]; then
      metrics+=("$d/metrics.jsonl")
    elif [[ -d $d ]]; then
      unfinished+=("$d")
    fi
  done
  if ((${#metrics[@]} == 0)); then
    printf 'sweep: no finished runs in %s yet: nothing to report\n' "$dir"
    return 0
  fi
  local data="$dir/plots/data"
  mkdir -p "$data"
  awk -v K="$STABILITY_K" -f "$LIB/json.awk" -f "$LIB/runs.awk" -f "$LIB/runs_table.awk" \
    "${metrics[@]}" | write_atomically "$data/runs.tsv"
  awk -f "$LIB/csv.awk" "$data/runs.tsv" | write_atomically "$dir/runs.csv"
  {
    awk -v K="$STABILITY_K" -f "$LIB/runs.awk" -f "$LIB/summary.awk" "$data/runs.tsv"
    unfinished_section "${unfinished[@]}"
  } | write_atomically "$dir/summary.md"
  if ((plots)) && ! command -v gnuplot >/dev/null; then
    printf 'sweep: gnuplot not found, no plots (make deps installs gnuplot-nox)\n' >&2
    plots=0
  fi
  if ((plots)); then
    awk -v DATA="$data" -f "$LIB/json.awk" -f "$LIB/runs.awk" -f "$LIB/series.awk" \
      "$data/runs.tsv" "${metrics[@]}" >"$data/manifest"
    draw_plots "$dir/plots" "$data/manifest"
  fi
  printf 'sweep: %d finished runs -> %s/runs.csv, %s/summary.md%s\n' "${#metrics[@]}" \
    "$dir" "$dir" "$( ((plots)) && printf ', %s/plots/' "$dir")"
}

# Lists the runs that have no completion marker, and why when known.
unfinished_section() {
  (($# > 0)) || return 0
  local d why
  printf '## Runs not finished\n\n'
  for d in "$@"; do
    if [[ -f $d/failed ]]; then
      why="failed, exit status $(cat "$d/failed"); see its log"
    else
      why="interrupted or in progress (redone by the next sweep)"
    fi
    printf -- "- \`%s\`: %s\n" "$(basename "$d")" "$why"
  done
  printf '\n'
}
