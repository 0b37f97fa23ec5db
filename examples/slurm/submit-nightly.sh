#!/bin/bash
# Submits the shard array, then the merge step to run once every array task
# has ended (afterany: a shard that hit its time limit still merges, with
# what it did). Run from the folder that holds sdpacheck.sif, e.g. from cron.
set -eu
mkdir -p nightly
array=$(sbatch --parsable shards.sbatch)
sbatch --dependency=afterany:"$array" merge.sbatch
