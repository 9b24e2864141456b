# json.awk - reads the flat JSON Lines records qgmd writes, by key name
# (never by position), so new fields or reordering cannot break a report.

# The number after "key": in a record, or "" when absent or not a number.
function json_num(line, key,    i, rest) {
  i = index(line, "\"" key "\":")
  if (!i)
    return ""
  rest = substr(line, i + length(key) + 3)
  sub(/^[ \t]+/, "", rest)
  if (match(rest, /^-?[0-9][0-9.eE+-]*/))
    return substr(rest, 1, RLENGTH)
  return ""
}

# The string after "key": in a record, or "" when absent.
function json_str(line, key,    i, rest) {
  i = index(line, "\"" key "\":")
  if (!i)
    return ""
  rest = substr(line, i + length(key) + 3)
  sub(/^[ \t]+/, "", rest)
  return substr(rest, 1, 1) == "\"" ? json_read_string(rest) : ""
}

# Decodes the string literal s starts with; the text after it is left in
# JSON_REST.
function json_read_string(s,    out, i, c, n) {
  out = ""
  n = length(s)
  for (i = 2; i <= n; i++) {
    c = substr(s, i, 1)
    if (c == "\"")
      break
    if (c == "\\") {
      c = substr(s, ++i, 1)
      if (c == "n" || c == "t" || c == "r")
        c = " "
      else if (c == "u") {
        c = "?"
        i += 4
      }
    }
    out = out c
  }
  JSON_REST = substr(s, i + 1)
  return out
}

# Fills keys[1..n] and vals[1..n] with the members of the object "name":{..}
# (strings decoded, numbers in their shortest form); returns n.
function json_object(line, name, keys, vals,    i, s, n, v) {
  i = index(line, "\"" name "\":{")
  if (!i)
    return 0
  s = substr(line, i + length(name) + 4)
  n = 0
  for (;;) {
    sub(/^[ \t,]+/, "", s)
    if (substr(s, 1, 1) != "\"")
      break
    keys[++n] = json_read_string(s)
    s = JSON_REST
    sub(/^[ \t]*:[ \t]*/, "", s)
    if (substr(s, 1, 1) == "\"") {
      v = json_read_string(s)
      s = JSON_REST
    } else {
      match(s, /^[^,}]*/)
      v = substr(s, 1, RLENGTH)
      s = substr(s, RLENGTH + 1)
      if (v ~ /^-?[0-9]/)
        v = sprintf("%.10g", v + 0)
    }
    vals[n] = v
  }
  return n
}
