# flags.awk - turns the flag entries of `qgmd --help` into man(7) entries
# for docs/man/qgmd.1, so that the page lists what the daemon accepts: a
# group's heading ("training flags (...):") becomes a subsection, an entry
# is its "  --name=TYPE" line (where a long name leaves no room, its help
# starts on the next line) and the lines indented below it.
function roff(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
function flush() {
  if (flag != "")
    printf ".TP\n.B %s\n%s\n", roff(flag), roff(text)
  flag = ""
}
/^[a-z]+ flags \(.*\):$/ {
  flush()
  heading = $0
  sub(/:$/, "", heading)
  printf ".SS %s\n", roff(heading)
  next
}
/^  --[a-z0-9-]+=[A-Z]+( |$)/ && $1 !~ /^--flagfile=/ {
  flush()
  flag = $1
  text = $0
  sub(/^  --[a-z0-9-]+=[A-Z]+ */, "", text)
  next
}
/^                         [^ ]/ && flag != "" {
  line = $0
  sub(/^ +/, "", line)
  text = text == "" ? line : text " " line
  next
}
{ flush() }
END { flush() }
