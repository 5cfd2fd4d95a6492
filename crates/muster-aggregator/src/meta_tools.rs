//! The meta-tools clients see in `tools/list`. Not implemented yet.
