//! The `core_*` tools (config, mcpserver, service, events), built on the store traits of
//! `muster-core`. Not implemented yet.
