# shellcheck shell=bash
# plan.sh - turns grid spec files and --set overrides into the list of runs.
# Sourced by tools/sweep. A spec line is `key = v1 v2 ...`; keys with
# several values are grid axes, and the plan is their cartesian product, the
# first line varying slowest. A line ending in `if KEY = VALUE` then sets
# its key in the runs that have that value only. See docs/SWEEP.md.

# Every run is one string of "key=value" lines (flagfile values are absolute
# paths). PLAN_RUNS holds them in order.
PLAN_RUNS=()
# Overrides from the command line: parallel arrays of keys, value lists and
# conditions ("" or KEY=VALUE).
SET_KEYS=()
SET_VALUES=()
SET_CONDS=()

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

# Splits the text after a key's `=` into REPLY (the values) and COND: ""
# for a line that applies to every run, "KEY=VALUE" for one that ends in
# `if KEY = VALUE`. $1 names the line for errors.
split_condition() {
  local where=$1 text=" $2"
  COND=""
  REPLY=$2
  [[ $text =~ ^(.*)[[:space:]]if([[:space:]].*)?$ ]] || return 0
  REPLY=${BASH_REMATCH[1]}
  [[ ${BASH_REMATCH[2]} =~ ^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=[[:space:]]*([^[:space:]]+)[[:space:]]*$ ]] ||
    spec_error "$where" "expected 'if KEY = VALUE' (one value) at the end of the line"
  COND="${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
}

# Parses `--set KEY=VALUES [if KEY = VALUE]` into SET_KEYS/SET_VALUES/
# SET_CONDS (checked against the working directory, where the user typed it).
add_override() {
  local arg=$1
  [[ $arg =~ ^([A-Za-z0-9_-]+)=(.*)$ ]] ||
    spec_error "--set $arg" "expected --set KEY=VALUE..."
  local key=${BASH_REMATCH[1]} values
  split_condition "--set $arg" "${BASH_REMATCH[2]}"
  values=$(check_setting "--set $arg" "$PWD" "$key" "$REPLY")
  SET_KEYS+=("$key")
  SET_VALUES+=("$values")
  SET_CONDS+=("$COND")
}

# Reads one spec file and appends its runs to PLAN_RUNS.
plan_spec() {
  local file=$1 base line text key values n=0 i id
  [[ -f $file && -r $file ]] || spec_error "$file" "cannot read the spec file"
  base=$(cd "$(dirname "$file")" && pwd)
  # One entry per line: its key, values, condition ("" or KEY=VALUE) and
  # where it was written. A line is known by its key and condition.
  local -a keys=() lists=() conds=() wheres=()
  # Every value written for a key, in the file or with --set: a condition
  # must name one of them (a typo is an error; a value that --set has
  # narrowed away just matches no run).
  local -A written=()
  local -A seen=()
  while IFS= read -r line || [[ -n $line ]]; do
    n=$((n + 1))
    text=${line%%#*}
    [[ $text =~ ^[[:space:]]*$ ]] && continue
    [[ $text =~ ^[[:space:]]*([A-Za-z0-9_-]+)[[:space:]]*=(.*)$ ]] ||
      spec_error "$file:$n" "expected 'key = value ...', got '$(trim "$line")'"
    key=${BASH_REMATCH[1]}
    split_condition "$file:$n" "${BASH_REMATCH[2]}"
    id=$key${COND:+ if $COND}
    [[ -n ${seen[$id]:-} ]] &&
      spec_error "$file:$n" "'$id' is already set on line ${seen[$id]}"
    seen[$id]=$n
    values=$(check_setting "$file:$n" "$base" "$key" "$REPLY")
    written[$key]+=" $values "
    keys+=("$key")
    lists+=("$values")
    conds+=("$COND")
    wheres+=("$file:$n")
  done <"$file"
  # Overrides replace the file's line for the same key and condition, or
  # add one.
  for i in "${!SET_KEYS[@]}"; do
    key=${SET_KEYS[$i]}
    written[$key]+=" ${SET_VALUES[$i]} "
    id=$key${SET_CONDS[$i]:+ if ${SET_CONDS[$i]}}
    if [[ -n ${seen[$id]:-} ]]; then
      local j
      for j in "${!keys[@]}"; do
        [[ ${keys[$j]} == "$key" && ${conds[$j]} == "${SET_CONDS[$i]}" ]] &&
          lists[j]=${SET_VALUES[$i]}
      done
    else
      keys+=("$key")
      lists+=("${SET_VALUES[$i]}")
      conds+=("${SET_CONDS[$i]}")
      wheres+=("--set $id")
      seen[$id]="--set"
    fi
  done
  [[ -n ${seen[np]:-} ]] || spec_error "$file" "no 'np' line (the number of ranks of each run)"
  local -a runs=("") next
  local r v
  for i in "${!keys[@]}"; do
    [[ -z ${conds[$i]} ]] || continue
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
  # Then the conditional lines, in order, on the runs that match.
  local ckey cval
  for i in "${!keys[@]}"; do
    [[ -n ${conds[$i]} ]] || continue
    ckey=${conds[$i]%%=*} cval=${conds[$i]#*=}
    [[ -n ${seen[$ckey]:-} ]] ||
      spec_error "${wheres[$i]}" "'if $ckey = ...': '$ckey' has no line of its own to choose runs by"
    [[ $ckey != "${keys[$i]}" ]] ||
      spec_error "${wheres[$i]}" "'${keys[$i]}' cannot depend on itself"
    [[ ${written[$ckey]} == *" $cval "* ]] ||
      spec_error "${wheres[$i]}" "'$cval' is not one of the values of '$ckey'"
    next=()
    local -a list
    read -ra list <<<"${lists[$i]}"
    for r in "${runs[@]}"; do
      run_value "$r" "$ckey"
      if [[ $REPLY != "$cval" ]]; then
        next+=("$r")
        continue
      fi
      for v in "${list[@]}"; do
        run_with "$r" "${keys[$i]}" "$v"
        next+=("$REPLY")
      done
    done
    runs=("${next[@]}")
  done
  PLAN_RUNS+=("${runs[@]}")
}

# Sets REPLY to run $1 with key $2 set to $3: its line replaced in place,
# or added at the end.
run_with() {
  local run=$1 key=$2 value=$3 line found=0
  REPLY=""
  while IFS= read -r line; do
    [[ -n $line ]] || continue
    if [[ $line == "$key="* ]]; then
      line="$key=$value"
      found=1
    fi
    REPLY+="$line"$'\n'
  done <<<"$run"
  ((found)) || REPLY+="$key=$value"$'\n'
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
  for key in topology np straggle algorithm alpha seed; do
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

# Keys whose value differs between runs of the plan, or that only some runs
# have (a conditional line's): they label progress.
plan_axes() {
  {
    printf '%s' "${PLAN_RUNS[@]}" | sort -u | cut -d= -f1 | uniq -d
    printf '%s' "${PLAN_RUNS[@]}" | cut -d= -f1 | sort | uniq -c |
      awk -v runs=${#PLAN_RUNS[@]} '$1 < runs { print $2 }'
  } | sort -u
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
