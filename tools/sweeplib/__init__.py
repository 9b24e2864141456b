"""The pieces of tools/sweep, one concept per module (docs/SWEEP.md):

spec      spec files and --set overrides to the list of runs
plan      each run's directory name and label
launcher  the command line that starts a run (mpirun or a template)
runner    one run: its directory, progress, markers
metrics   the daemon's JSON Lines records, numbers kept as written
table     the runs table (runs.tsv, runs.csv)
groups    how runs group into tables and seeds, and their statistics
summary   summary.md
plots     the plot data and the gnuplot scripts
report    the aggregation of a sweep directory
cli       the command line
"""
