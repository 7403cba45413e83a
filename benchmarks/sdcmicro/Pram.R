# sdcMicro's pram on one column of a CSV, beside blendin's (benchmarks/bench_sdcmicro.py):
# the values changed and the time, as one JSON line.
# Rscript Pram.R CSV COLUMN [pd=0.8] [alpha=0.5] [runs=3]
suppressMessages({library(sdcMicro); library(jsonlite)})
a <- commandArgs(trailingOnly = TRUE)
opt <- list(pd = "0.8", alpha = "0.5", runs = "3")
for (x in a[-(1:2)]) { kv <- strsplit(x, "=", fixed = TRUE)[[1]]; opt[[kv[1]]] <- kv[2] }
dat <- read.csv(a[1], stringsAsFactors = FALSE)
x <- as.factor(dat[[a[2]]])
runs <- as.integer(opt$runs)
set.seed(1)
ts <- c()
for (i in seq_len(runs)) {
  t <- proc.time()[["elapsed"]]
  r <- pram(x, pd = as.numeric(opt$pd), alpha = as.numeric(opt$alpha))
  ts <- c(ts, proc.time()[["elapsed"]] - t)
}
changed <- sum(as.character(r$x_pram) != as.character(x))
cat(toJSON(list(method = "pram", rows = length(x), levels = nlevels(x), changed = changed,
                ms = 1000 * median(ts)), auto_unbox = TRUE, digits = NA), "\n")
