"""Case studies: real data sets and the analyses of the seed papers built on them."""
