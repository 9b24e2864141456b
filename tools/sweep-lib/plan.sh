# shellcheck shell=bash
# plan.sh - turns grid spec files and --set overrides into the list of runs.
# Sourced by tools/sweep. A spec line is `key = v1 v2 ...`; keys with
# several values are grid axes, and the plan is their cartesian product, the
# first line varying slowest. See docs/SWEEP.md.

# Every run is one string of "key=value" lines (flagfile values are absolute
# paths). PLAN_RUNS holds them in order.
PLAN_RUNS=()
# Overrides from the command line: parallel arrays of keys and value lists.
SET_KEYS=()
SET_VALUES=()

# The flags qgmd accepts, read from its --help so the two cannot disagree.
known_flags() {
  "$DAEMON" --help | sed -n 's/^  --\([a-z][a-z0-9-]*\)=.*/\1/p'
}

# Fails with exit 2 and one line naming where the problem is.
spec_error() {
  printf 'sweep: %s: %s\n' "$1" "$2" >&2
  exit 2
}

# Checks one `key = values` setting; $1 names its origin for errors, $2 is
# the directory relative paths are resolved against. Prints the normalised
# value list (flagfile values made absolute).
check_setting() {
  local where=$1 base=$2 key=$3 values=$4 v
  local -a list
  read -ra list <<<"$values"
  ((${#list[@]} > 0)) || spec_error "$where" "no value for '$key'"
  case $key in
    metrics) spec_error "$where" "'metrics' is set by the sweep (every run writes runs/NAME/metrics.jsonl)" ;;
    np | flagfile) ;;
    *) grep -qxF -- "$key" <<<"$KNOWN_FLAGS" ||
      spec_error "$where" "unknown key '$key' (a qgmd flag without its --, np or flagfile)" ;;
  esac
  local -a normalised=()
  for v in "${list[@]}"; do
    [[ $v == *, ]] && spec_error "$where" "'$v': values are separated by spaces, not commas"
    case $key in
      np) [[ $v =~ ^[1-9][0-9]{0,3}$ ]] ||
        spec_error "$where" "np must be a number of ranks in [1, 9999], got '$v'" ;;
      flagfile)
        [[ $v == /* ]] || v="$base/$v"
        [[ -f $v && -r $v ]] || spec_error "$where" "cannot read flag file '$v'"
        v="$(cd "$(dirname "$v")" && pwd)/$(basename "$v")" ;;
    esac
    normalised+=("$v")
  done
  printf '%s\n' "${normalised[*]}"
}

# Parses `--set KEY=VALUES` into SET_KEYS/SET_VALUES (checked against the
# working directory, where the user typed it).
add_override() {
  local arg=$1
  [[ $arg =~ ^([A-Za-z0-9_-]+)=(.*)$ ]] ||
    spec_error "--set $arg" "expected --set KEY=VALUE..."
  local key=${BASH_REMATCH[1]} values
  values=$(check_setting "--set $arg" "$PWD" "$key" "${BASH_REMATCH[2]}")
  SET_KEYS+=("$key")
  SET_VALUES+=("$values")
}

# Reads one spec file and appends its runs to PLAN_RUNS.
plan_spec() {
  local file=$1 base line text key values n=0 i
  [[ -f $file && -r $file ]] || spec_error "$file" "cannot read the spec file"
  base=$(cd "$(dirname "$file")" && pwd)
  local -a keys=() lists=()
  local -A seen=()
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    text=${line%%#*}
    [[ $text =~ ^[[:space:]]*$ ]] && continue
    [[ $text =~ ^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=(.*)$ ]] ||
      spec_error "$file:$n" "expected 'key = value ...', got '$(trim "$line")'"
    key=${BASH_REMATCH[1]}
    [[ -n ${seen[$key]:-} ]] &&
      spec_error "$file:$n" "'$key' is already set on line ${seen[$key]}"
    seen[$key]=$n
    values=$(check_setting "$file:$n" "$base" "$key" "${BASH_REMATCH[2]}")
    keys+=("$key")
    lists+=("$values")
  done <"$file"
  # Overrides replace the file's line for the same key, or add one.
  for i in "${!SET_KEYS[@]}"; do
    key=${SET_KEYS[$i]}
    if [[ -n ${seen[$key]:-} ]]; then
      local j
      for j in "${!keys[@]}"; do
        [[ ${keys[$j]} == "$key" ]] && lists[j]=${SET_VALUES[$i]}
      done
    else
      keys+=("$key")
      lists+=("${SET_VALUES[$i]}")
      seen[$key]="--set"
    fi
  done
  [[ -n ${seen[np]:-} ]] || spec_error "$file" "no 'np' line (the number of ranks of each run)"
  local -a runs=("") next
  local r v
  for i in "${!keys[@]}"; do
    next=()
    local -a list
    read -ra list <<<"${lists[$i]}"
    for r in "${runs[@]}"; do
      for v in "${list[@]}"; do
        next+=("$r${keys[$i]}=$v"$'\n')
      done
    done
    runs=("${next[@]}")
  done
  PLAN_RUNS+=("${runs[@]}")
}

trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  printf '%s' "${s%"${s##*[![:space:]]}"}"
}

# Sets REPLY to the value of key $2 in run $1 ("" if unset), without a
# subshell: plans of hundreds of runs are described at start-up.
run_value() {
  local run=$'\n'$1 rest
  rest=${run#*$'\n'"$2"=}
  if [[ $rest == "$run" ]]; then REPLY=""; else REPLY=${rest%%$'\n'*}; fi
}

# A run's directory name: the usual axes spelled out for people, then a
# hash of every setting (sorted, so line order does not matter; flag files
# by content, so editing one gives new runs instead of stale "finished" ones).
run_name() {
  local run=$1 key name="" hash line
  run_value "$run" flagfile
  [[ -n $REPLY ]] && name=${REPLY##*/} && name=${name%.*}
  for key in topology np algorithm alpha seed; do
    run_value "$run" "$key"
    [[ -n $REPLY ]] && name+="${name:+_}$key-$REPLY"
  done
  hash=$(
    while IFS= read -r line; do
      if [[ $line == flagfile=* ]]; then
        printf 'flagfile=%s\n' "${line##*/}"
        cat "${line#flagfile=}"
      else
        printf '%s\n' "$line"
      fi
    done < <(sort <<<"$run") | cksum
  )
  REPLY="${name//[^A-Za-z0-9.+=_-]/_}_$(printf '%08x' "${hash%% *}")"
}

# Keys whose value differs between runs of the plan: they label progress.
plan_axes() {
  printf '%s' "${PLAN_RUNS[@]}" | sort -u | cut -d= -f1 | uniq -d
}

# Sets REPLY to "alpha=0.1 algorithm=dsgd" for a run: its values of the
# plan's axes.
run_label() {
  local run=$1 key label=""
  for key in $PLAN_AXES; do
    run_value "$run" "$key"
    [[ -n $REPLY ]] || continue
    [[ $key == flagfile ]] && REPLY=${REPLY##*/}
    label+="${label:+ }$key=$REPLY"
  done
  [[ -n $label ]] || { run_name "$run"; label=$REPLY; }
  REPLY=$label
}

# PLAN_NAMES and PLAN_LABELS: each run's directory name and label.
describe_plan() {
  local k
  PLAN_AXES=$(plan_axes)
  PLAN_NAMES=() PLAN_LABELS=()
  for k in "${!PLAN_RUNS[@]}"; do
    run_name "${PLAN_RUNS[$k]}"
    PLAN_NAMES[k]=$REPLY
    run_label "${PLAN_RUNS[$k]}"
    PLAN_LABELS[k]=$REPLY
  done
}

# The command line of a run, one word per line.
run_command() {
  local run=$1 dir=$2 line
  run_value "$run" np
  printf '%s\n' mpirun --oversubscribe --bind-to none -np "$REPLY" "$DAEMON"
  while IFS= read -r line; do
    case $line in
      np=* | '') ;;
      *) printf -- '--%s\n' "$line" ;;
    esac
  done <<<"$run"
  printf -- '--metrics=%s\n' "$dir/metrics.jsonl"
}
