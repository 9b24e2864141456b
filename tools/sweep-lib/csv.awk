# csv.awk - runs.tsv to runs.csv (RFC 4180: fields with commas or quotes
# are quoted, quotes doubled).
BEGIN { FS = "\t"; OFS = "," }
{
  for (i = 1; i <= NF; i++)
    if ($i ~ /[",]/) {
      gsub(/"/, "\"\"", $i)
      $i = "\"" $i "\""
    }
  $1 = $1
  print
}
