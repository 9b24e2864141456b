# flags.awk - turns the flag lines of `qgmd --help` into man(7) entries
# for docs/man/qgmd.1, so that the page lists what the daemon accepts.
function roff(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
/^  --[a-z-]+=[A-Z]+ / && $1 !~ /^--flagfile=/ {
  flag = $1
  text = $0
  sub(/^  --[a-z-]+=[A-Z]+ +/, "", text)
  printf ".TP\n.B %s\n%s\n", roff(flag), roff(text)
}
