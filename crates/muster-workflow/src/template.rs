//! Go-template rendering with the sprig function set and typed output (a bare reference keeps
//! its JSON type). Not implemented yet.
