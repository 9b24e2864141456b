# shellcheck shell=bash
# plot.sh - draws the sweep's PNGs with gnuplot from the data files and
# manifest series.awk writes. Sourced by report.sh.

# One colour per algorithm, the same in every figure.
algorithm_color() {
  case $1 in
    dsgd) echo 1 ;; dsgdm-n) echo 2 ;; qg-dsgdm-n) echo 3 ;; d2) echo 4 ;;
    gt) echo 5 ;; allreduce) echo 8 ;; dsgdm) echo 6 ;; qg-dsgdm) echo 7 ;;
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
  local kind=$1 title=$2 png=$3 alg file color sep="plot "
  printf 'set terminal pngcairo size 900,560 font ",11"\nset output %s\n' "$(gp_string "$png")"
  printf 'set title %s noenhanced\nset key bottom right noenhanced\nset grid\n' "$(gp_string "$title")"
  case $kind in
    accuracy) printf 'set xlabel "epoch"\nset ylabel "test accuracy, averaged model (%%)"\n' ;;
    consensus) printf 'set xlabel "epoch"\nset ylabel "consensus distance (mean ||x_i - x̄||²)"\nset key top right\n' ;;
    final) printf 'set xlabel "Dirichlet alpha (log scale; small = non-IID)"\nset ylabel "final test accuracy, averaged model (%%)"\nset logscale x\nset offsets graph 0.05, graph 0.05, 0, 0\n' ;;
  esac
  while IFS=$'\t' read -r alg file; do
    color=$(algorithm_color "$alg")
    case $kind in
      accuracy)
        printf '%s%s using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc %d notitle, \\\n  %s using 1:2 with linespoints lc %d pt 7 ps 0.6 title %s' \
          "$sep" "$(gp_string "$file")" "$color" "$(gp_string "$file")" "$color" "$(gp_string "$alg")" ;;
      consensus)
        printf '%s%s using 1:6:7 with filledcurves fs transparent solid 0.2 noborder lc %d notitle, \\\n  %s using 1:5 with linespoints lc %d pt 7 ps 0.6 title %s' \
          "$sep" "$(gp_string "$file")" "$color" "$(gp_string "$file")" "$color" "$(gp_string "$alg")" ;;
      final)
        printf '%s%s using 1:2:3 with yerrorlines lc %d pt 7 title %s' \
          "$sep" "$(gp_string "$file")" "$color" "$(gp_string "$alg")" ;;
    esac
    sep=$', \\\n  '
  done
  printf '\n'
}

# Draws every figure listed in the manifest $2 into directory $1.
draw_plots() {
  local dir=$1 manifest=$2 kind table alpha alg file prefix
  local -A series=()
  local -a order=()
  while IFS=$'\037' read -r kind table alpha alg file; do
    local key="$kind"$'\037'"$table"$'\037'"$alpha"
    [[ -n ${series[$key]+set} ]] || order+=("$key")
    series[$key]+="$alg"$'\t'"$file"$'\n'
  done <"$manifest"
  local key title
  for key in "${order[@]}"; do
    IFS=$'\037' read -r kind table alpha <<<"$key"
    prefix=$(file_part "$table")
    if [[ $kind == epoch ]]; then
      title="${table:+$table, }alpha = $alpha (band: min-max over seeds)"
      figure_script accuracy "$title" "$dir/accuracy-vs-epoch${prefix:+_$prefix}_alpha-$alpha.png" \
        <<<"${series[$key]%$'\n'}" | gnuplot
      figure_script consensus "$title" "$dir/consensus-vs-epoch${prefix:+_$prefix}_alpha-$alpha.png" \
        <<<"${series[$key]%$'\n'}" | gnuplot
    else
      title="${table:+$table: }final accuracy vs alpha (error bars: std over seeds)"
      figure_script final "$title" "$dir/final-accuracy-vs-alpha${prefix:+_$prefix}.png" \
        <<<"${series[$key]%$'\n'}" | gnuplot
    fi
  done
}

file_part() {
  printf '%s' "$1" | tr -cs 'A-Za-z0-9.=+-' '_'
}
