//! Pure functions that name tools, prompts and resources exposed by the aggregator.
//! Not implemented yet.
