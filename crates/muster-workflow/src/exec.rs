//! Execution: the engine service, one `match` over step kinds, `allowFailure`/`onFailure`, and
//! the recording of every step through the `ExecutionStore`. Not implemented yet.
