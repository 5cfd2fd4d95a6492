//! Planning: compiling a workflow spec once, before anything runs.
//!
//! `Plan::compile(&WorkflowSpec)` parses every template and jq program and resolves step
//! references. It is pure and table-tested. Not implemented yet.
