# shellcheck shell=bash
# plot.sh - draws the sweep's PNGs with gnuplot from the data files and
# manifest series.awk writes. Sourced by report.sh.

# One colour per algorithm, the same in every figure (the asynchronous
# modes, never in a figure with the others, reuse the first three).
algorithm_color() {
  case $1 in
    dsgd | asgd) echo 1 ;; dsgdm-n | asgd-m) echo 2 ;; qg-dsgdm-n | gsgm) echo 3 ;;
    d2) echo 4 ;; gt) echo 5 ;; allreduce) echo 8 ;; dsgdm) echo 6 ;; qg-dsgdm) echo 7 ;;
    *) echo $((9 + $(cksum <<<"$1" | cut -c1))) ;;
  esac
}

# gnuplot wants its strings quoted; file names and labels come from flags.
gp_string() {
  local s=${1//\\/\\\\}
  printf '"%s"' "${s//\"/\\\"}"
}

# Writes the gnuplot script of one figure to stdout. $1 kind (accuracy,
# consensus, final), $2 title, $3 output PNG, then "algorithm<TAB>file" lines
# on stdin.
figure_script() {
  local kind=$1 title=$2 png=$3 alg file color sep="plot " i
  local -a algs=() files=()
  while IFS=$'\t' read -r alg file; do
    algs+=("$alg")
    files+=("$file")
  done
  printf 'set terminal pngcairo size 900,560 font ",11"\nset output %s\n' "$(gp_string "$png")"
  printf 'set title %s noenhanced\nset key bottom right noenhanced\nset grid\n' "$(gp_string "$title")"
  case $kind in
    accuracy | consensus)
      printf 'set xlabel "epoch"\n'
      # Whole epochs only: short runs would otherwise get ticks at 1.5.
      (($(last_epoch "${files[0]}") <= 12)) && printf 'set xtics 1\n' ;;
  esac
  case $kind in
    accuracy) printf 'set ylabel "test accuracy, averaged model (%%)"\n' ;;
    consensus)
      printf 'set ylabel "consensus distance, mean ||x_i - x̄||²"\nset key top right\n'
      # It falls by orders of magnitude, but is exactly 0 when every node
      # sees every other (2 nodes): log scale only when it can be drawn.
      awk '!/^#/ && $6 <= 0 { zero = 1 } END { exit zero }' "${files[@]}" &&
        printf 'set logscale y\nset format y "%%.0e"\n' ;;
    final) printf 'set xlabel "Dirichlet alpha (log scale; small = non-IID)"\nset ylabel "final test accuracy, averaged model (%%)"\nset logscale x\nset offsets graph 0.05, graph 0.05, 0, 0\n' ;;
  esac
  for i in "${!algs[@]}"; do
    alg=${algs[$i]}
    file=$(gp_string "${files[$i]}")
    color=$(algorithm_color "$alg")
    case $kind in
      accuracy)
        printf '%s%s using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc %d notitle, \\\n  %s using 1:2 with linespoints lc %d pt 7 ps 0.6 title %s' \
          "$sep" "$file" "$color" "$file" "$color" "$(gp_string "$alg")" ;;
      consensus)
        printf '%s%s using 1:6:7 with filledcurves fs transparent solid 0.2 noborder lc %d notitle, \\\n  %s using 1:5 with linespoints lc %d pt 7 ps 0.6 title %s' \
          "$sep" "$file" "$color" "$file" "$color" "$(gp_string "$alg")" ;;
      final)
        printf '%s%s using 1:2:3 with yerrorlines lc %d pt 7 title %s' \
          "$sep" "$file" "$color" "$(gp_string "$alg")" ;;
    esac
    sep=$', \\\n  '
  done
  printf '\n'
}

last_epoch() {
  awk '!/^#/ { e = $1 } END { print int(e) }' "$1"
}

# Whether any of the data files in "algorithm<TAB>file" lines $1 has a
# non-zero consensus distance (an asynchronous run's is 0: one model).
has_consensus() {
  local alg file
  local -a files=()
  while IFS=$'\t' read -r alg file; do
    [[ -n $file ]] && files+=("$file")
  done <<<"$1"
  awk '!/^#/ && $5 != 0 { found = 1 } END { exit !found }' "${files[@]}"
}

# Draws one figure: $1 kind, $2 title, $3 PNG, $4 "algorithm<TAB>file"
# lines. gnuplot's chatter goes to PLOT_LOG; a figure that fails is
# reported and the others are still drawn.
draw() {
  if ! figure_script "$1" "$2" "$3" <<<"${4%$'\n'}" | gnuplot 2>>"$PLOT_LOG"; then
    printf 'sweep: gnuplot could not draw %s; see %s\n' "$3" "$PLOT_LOG" >&2
  fi
}

# Draws every figure listed in the manifest $2 into directory $1.
draw_plots() {
  local dir=$1 manifest=$2 kind table alpha alg file name key title
  local -A series=()
  local -a order=()
  PLOT_LOG="$dir/data/gnuplot.log"
  : >"$PLOT_LOG"
  while IFS=$'\037' read -r kind table alpha alg file; do
    key="$kind"$'\037'"$table"$'\037'"$alpha"
    [[ -n ${series[$key]+set} ]] || order+=("$key")
    series[$key]+="$alg"$'\t'"$file"$'\n'
  done <"$manifest"
  for key in "${order[@]}"; do
    IFS=$'\037' read -r kind table alpha <<<"$key"
    name=$(file_part "$table")
    name=${name:+_$name}
    if [[ $kind == epoch ]]; then
      title="${table:+$table, }alpha = $alpha (band: min-max over seeds)"
      draw accuracy "$title" "$dir/accuracy-vs-epoch${name}_alpha-$alpha.png" "${series[$key]}"
      has_consensus "${series[$key]}" &&
        draw consensus "$title" "$dir/consensus-vs-epoch${name}_alpha-$alpha.png" "${series[$key]}"
    else
      title="${table:+$table: }final accuracy vs alpha (error bars: std over seeds)"
      draw final "$title" "$dir/final-accuracy-vs-alpha$name.png" "${series[$key]}"
    fi
  done
}

file_part() {
  printf '%s' "$1" | tr -cs 'A-Za-z0-9.=+-' '_'
}
