//! # muster-gotmpl
//!
//! Go's `text/template` with the sprig function set, and the parts of Go's runtime that its
//! semantics rest on (`fmt` printing, `strconv` quoting and number literals, `time` layouts and
//! durations), ported to Rust and checked case by case against Go.
//!
//! It is the bottom of muster's crate graph: it depends on no muster crate, no async runtime
//! and no MCP crate, and every muster crate may use it. The workflow engine renders step arguments, conditions and outputs with it, the
//! aggregator parses Go durations and quotes names the way Go does with it, and muster-core
//! prints Go durations in event messages with it.
//!
//! Why a port of its own rather than the `gtmpl` crate: see the decision record
//! `docs/decisions/0002-go-template-port-over-gtmpl.md` in the repository (gtmpl with its sprig
//! functions matches Go on a fraction of the oracle corpus this crate passes in full).
//!
//! Templates follow Go's `text/template` semantics exactly (parsing, whitespace trimming,
//! pipelines, variables, `if`/`with`/`range`/`define`/`template`/`block`, `break`/`continue`,
//! printing of values) with the sprig function set and Go's `missingkey=error` option, so a
//! reference to a missing map key is an error even under `default`. JSON data is seen the way
//! Go's `encoding/json` decodes it into `interface{}`: objects are `map[string]interface{}`,
//! arrays `[]interface{}`, and every number is a `float64`.
//!
//! Two ways to render:
//! - [`Template::render`] produces text, exactly as Go's `Execute` would;
//! - [`Template::render_value`] produces a typed JSON value: a template that is only a
//!   reference path (`{{ .results.pods.items }}`) yields the referenced JSON unchanged, a
//!   template that is exactly one action yields the action's value with its real type
//!   (`len` gives a number, `eq` a boolean, `printf` a string), and anything else is text.
//!
//! [`render_tree`] and [`TemplateTree`] apply [`Template::render_value`] to every string leaf
//! of a JSON document (step arguments, workflow output templates). [`Roots`] lends named
//! roots of the data without copying them. A renderer can bound the time a template may take
//! with the thread's [`deadline`]. Beside templates, [`duration`] parses and prints Go
//! durations and [`strconv::quote`] quotes like Go's `%q`.
//!
//! The engine is tested case by case against Go 1.19 `text/template` with sprig 3.2 (see
//! `tests/oracle`). Where it knowingly differs from Go:
//! - not provided (parsing fails with "function not defined"): `env` and `expandenv` (they would
//!   expose the server's environment), `getHostByName`, the crypto and certificate functions
//!   (`bcrypt`, `htpasswd`, `genPrivateKey`, `derivePassword`, `buildCustomCert`, `genCA*`,
//!   `genSelfSignedCert*`, `genSignedCert*`, `encryptAES`, `decryptAES`, `randBytes`), `semver`,
//!   `semverCompare`, `urlParse` and `urlJoin`; Helm's `required` is provided in addition;
//! - `keys` and `values` list map entries in key order (Go's order is random);
//! - `set`, `unset` and `merge` on a map that comes from the data return a modified copy: the
//!   data itself is never changed (maps built by `dict` are changed in place, as in Go);
//! - time zones: only `UTC` and `Local` are known (other names fall back to UTC, as sprig does
//!   for unknown zones), and `now` prints without Go's monotonic-clock suffix;
//! - bytes that are not valid UTF-8 (from `\x` escapes, `b64dec`, byte-based slicing) become
//!   U+FFFD; complex-number literals are rejected;
//! - nesting is limited (100 levels in the text, 200 nested `template` calls, 1000 nested
//!   evaluations) so that recursion never exhausts a thread's stack;
//! - two newer Go features are accepted: `{{ else with }}` (Go 1.23) and `{{ range 5 }}`
//!   (Go 1.22).
//!
//! ```
//! use muster_gotmpl::Template;
//! use serde_json::json;
//!
//! let data = json!({"input": {"name": "web", "tags": ["a", "b"]}});
//! let t = Template::parse("{{ .input.name | upper }}-{{ len .input.tags }}").unwrap();
//! assert_eq!(t.render(&data).unwrap(), "WEB-2");
//! let t = Template::parse("{{ .input.tags }}").unwrap();
//! assert_eq!(t.render(&data).unwrap(), "[a b]");
//! assert_eq!(t.render_value(&data).unwrap(), json!(["a", "b"]));
//! ```

mod ast;
pub mod deadline;
pub mod duration;
mod exec;
mod funcs;
mod gofmt;
mod gotime;
mod lex;
mod parse;
mod roots;
pub mod strconv;
mod typed;
mod unicode;
mod value;

use std::sync::Arc;

use serde_json::Value as Json;

pub use exec::MAX_OUTPUT_BYTES;
pub use gofmt::MAX_PRINT_BYTES;
pub use roots::Roots;
pub use typed::{TemplateTree, render_tree};

/// The name given to templates parsed with [`Template::parse`].
pub const DEFAULT_NAME: &str = "template";

/// A template that failed to parse or to render.
///
/// The message names the template and the problem; it never contains values of the data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// The template text is not a valid template.
    #[error("invalid template {name:?}: {message}")]
    Parse {
        /// Template name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// Rendering failed (missing key, wrong argument type, function error, …).
    #[error("template {name:?} execution failed: {message}")]
    Exec {
        /// Template name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

impl TemplateError {
    /// The name of the template.
    pub fn name(&self) -> &str {
        match self {
            TemplateError::Parse { name, .. } | TemplateError::Exec { name, .. } => name,
        }
    }

    /// The problem, without the template name.
    pub fn message(&self) -> &str {
        match self {
            TemplateError::Parse { message, .. } | TemplateError::Exec { message, .. } => message,
        }
    }
}

/// What a reference to a missing map key does (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// `missingkey=error`: rendering fails, naming the key (muster's mode).
    #[default]
    Error,
    /// `missingkey=default`: the missing value prints as `<no value>`.
    Default,
}

/// A parsed template: parse once, render many times. Cheap to clone, `Send` and `Sync`.
#[derive(Clone, Debug)]
pub struct Template {
    inner: Arc<Inner>,
    missing_key: MissingKey,
}

#[derive(Debug)]
struct Inner {
    name: String,
    source: String,
    /// The parse result; a pure reference path that Go cannot parse (`.a-b`, `[0]`) keeps its
    /// error here and is still usable through [`Template::render_value`].
    trees: Result<parse::TreeSet, String>,
    shape: typed::Shape,
}

impl Template {
    /// Parses a template named [`DEFAULT_NAME`].
    pub fn parse(src: &str) -> Result<Template, TemplateError> {
        Template::parse_named(DEFAULT_NAME, src)
    }

    /// Parses a template with a name used in error messages (and by `{{ template }}`).
    pub fn parse_named(name: &str, src: &str) -> Result<Template, TemplateError> {
        let trees = parse::parse(name, src, &funcs::exists);
        let shape = typed::Shape::of(src, trees.as_ref().ok().and_then(|t| t.get(name)));
        if let Err(message) = &trees
            && !matches!(shape, typed::Shape::RefPath(_))
        {
            return Err(TemplateError::Parse {
                name: name.to_owned(),
                message: message.clone(),
            });
        }
        Ok(Template {
            inner: Arc::new(Inner {
                name: name.to_owned(),
                source: src.to_owned(),
                trees,
                shape,
            }),
            missing_key: MissingKey::Error,
        })
    }

    /// The same template with another missing-key behaviour.
    #[must_use]
    pub fn with_missing_key(self, missing_key: MissingKey) -> Template {
        Template {
            missing_key,
            ..self
        }
    }

    /// The template's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The template text.
    pub fn source(&self) -> &str {
        &self.inner.source
    }

    /// Whether the text has no action at all (it renders to itself).
    pub fn is_literal(&self) -> bool {
        matches!(self.inner.shape, typed::Shape::Literal)
    }

    /// Whether [`Template::render_value`] keeps the type of the value: the template is a
    /// reference path or exactly one action (no text around it, no variable declaration).
    pub fn is_single_action(&self) -> bool {
        matches!(
            self.inner.shape,
            typed::Shape::RefPath(_) | typed::Shape::SingleAction
        )
    }

    fn trees(&self) -> Result<&parse::TreeSet, TemplateError> {
        self.inner
            .trees
            .as_ref()
            .map_err(|message| TemplateError::Parse {
                name: self.inner.name.clone(),
                message: message.clone(),
            })
    }

    fn exec_error(&self, message: String) -> TemplateError {
        TemplateError::Exec {
            name: self.inner.name.clone(),
            message,
        }
    }

    /// Renders to text with Go's `text/template` semantics.
    pub fn render(&self, data: &Json) -> Result<String, TemplateError> {
        self.render_data(value::Value::from_json(data))
    }

    /// Renders to text against borrowed roots (no copy of the data).
    pub fn render_in(&self, roots: &Roots<'_>) -> Result<String, TemplateError> {
        self.render_data(roots.to_value())
    }

    pub(crate) fn render_data<'a>(
        &'a self,
        data: value::Value<'a>,
    ) -> Result<String, TemplateError> {
        let trees = self.trees()?;
        exec::execute(
            trees,
            &self.inner.source,
            &self.inner.name,
            self.missing_key == MissingKey::Error,
            data,
        )
        .map_err(|m| self.exec_error(m))
    }

    /// Renders to a typed JSON value (see the module documentation).
    pub fn render_value(&self, data: &Json) -> Result<Json, TemplateError> {
        typed::render_value(self, data)
    }

    /// Renders to a typed JSON value against borrowed roots (no copy of the data).
    pub fn render_value_in(&self, roots: &Roots<'_>) -> Result<Json, TemplateError> {
        typed::render_value_in(self, roots)
    }
}
