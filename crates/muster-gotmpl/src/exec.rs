//! The executor, a port of Go's `text/template/exec.go` over [`Value`].

use super::ast::{Arg, Branch, Command, List, Node, Number, Pipe};
use super::funcs::{self, Func, Param};
use super::gofmt::{sprint_one, too_large};
use super::parse::TreeSet;
use super::value::{Str, Value};

/// Go allows 100 000 nested template invocations; a native stack does not.
const MAX_EXEC_DEPTH: usize = 200;

/// Limit on nested evaluation (pipelines, control structures, template calls together), so
/// that recursion stays within a thread's stack whatever the template does.
const MAX_NESTING: usize = 1000;

/// A value as the executor sees it: Go distinguishes a nil interface stored in a map or slice
/// (`nil_iface`) from an absent value; the difference shows in field access on it.
#[derive(Clone, Debug)]
pub(crate) struct Cur<'a> {
    pub(crate) v: Value<'a>,
    pub(crate) nil_iface: bool,
}

impl<'a> Cur<'a> {
    fn val(v: Value<'a>) -> Self {
        Cur {
            v,
            nil_iface: false,
        }
    }

    /// A value read from a collection element of type `interface{}`.
    fn elem(v: Value<'a>) -> Self {
        let nil_iface = v.is_nil();
        Cur { v, nil_iface }
    }
}

/// Why execution stopped early.
pub(crate) enum Flow {
    /// An error (message already formatted).
    Err(String),
    Break,
    Continue,
}

type R<T> = Result<T, Flow>;

/// Where an error happened.
#[derive(Clone, Copy)]
enum At<'t> {
    None,
    Arg(&'t Arg),
    Pipe(&'t Pipe),
    Pos(usize, &'t str),
}

/// The most a template writes when rendered; a larger output fails the render (Go has no
/// such bound; a workflow's templates produce arguments and results, not bulk data).
pub const MAX_OUTPUT_BYTES: usize = 64 * 1024 * 1024;

/// Execution state.
pub(crate) struct Exec<'t, 'a> {
    trees: &'t TreeSet,
    source: &'t str,
    parse_name: &'t str,
    tmpl_name: &'t str,
    missing_error: bool,
    out: String,
    vars: Vec<(String, Cur<'a>)>,
    depth: usize,
    nesting: usize,
    at: At<'t>,
}

/// Executes template `name` of `trees` with `data` as dot.
pub(crate) fn execute<'t: 'a, 'a>(
    trees: &'t TreeSet,
    source: &'t str,
    name: &'t str,
    missing_error: bool,
    data: Value<'a>,
) -> Result<String, String> {
    let mut ex = Exec {
        trees,
        source,
        parse_name: name,
        tmpl_name: name,
        missing_error,
        out: String::new(),
        vars: vec![("$".to_owned(), Cur::val(data.clone()))],
        depth: 0,
        nesting: 0,
        at: At::None,
    };
    let Some(root) = trees.get(name) else {
        return Err(format!(
            "template: {name}: {name:?} is an incomplete or empty template"
        ));
    };
    match ex.walk_list(&Cur::val(data), root) {
        Ok(()) => Ok(ex.out),
        Err(Flow::Err(e)) => Err(e),
        Err(Flow::Break | Flow::Continue) => Ok(ex.out),
    }
}

/// Evaluates the pipeline of a template that is exactly one action, returning its value.
pub(crate) fn eval_single<'t: 'a, 'a>(
    trees: &'t TreeSet,
    source: &'t str,
    name: &'t str,
    missing_error: bool,
    pipe: &'t Pipe,
    data: Value<'a>,
) -> Result<Value<'a>, String> {
    let mut ex = Exec {
        trees,
        source,
        parse_name: name,
        tmpl_name: name,
        missing_error,
        out: String::new(),
        vars: vec![("$".to_owned(), Cur::val(data.clone()))],
        depth: 0,
        nesting: 0,
        at: At::None,
    };
    match ex.eval_pipeline(&Cur::val(data), pipe) {
        Ok(v) => Ok(v),
        Err(Flow::Err(e)) => Err(e),
        Err(Flow::Break | Flow::Continue) => Ok(Value::Nil),
    }
}

impl<'t: 'a, 'a> Exec<'t, 'a> {
    // ---- errors --------------------------------------------------------------------------

    fn location(&self, pos: usize) -> String {
        let pos = pos.min(self.source.len());
        let text = self.source.get(..pos).unwrap_or("");
        let line = 1 + text.matches('\n').count();
        let col = match text.rfind('\n') {
            Some(i) => pos - i - 1,
            None => pos,
        };
        format!("{}:{}:{}", self.parse_name, line, col)
    }

    fn err(&self, msg: impl std::fmt::Display) -> Flow {
        let (pos, ctx) = match self.at {
            At::None => {
                return Flow::Err(format!("template: {}: {}", self.tmpl_name, msg));
            }
            At::Arg(a) => (a.pos(), a.describe()),
            At::Pipe(p) => (p.pos, p.describe()),
            At::Pos(p, what) => (p, what.to_owned()),
        };
        Flow::Err(format!(
            "template: {}: executing {:?} at <{}>: {}",
            self.location(pos),
            self.tmpl_name,
            ctx,
            msg
        ))
    }

    // ---- variables -----------------------------------------------------------------------

    fn mark(&self) -> usize {
        self.vars.len()
    }

    fn pop(&mut self, mark: usize) {
        self.vars.truncate(mark);
    }

    fn set_var(&mut self, name: &str, value: Cur<'a>) -> R<()> {
        for v in self.vars.iter_mut().rev() {
            if v.0 == name {
                v.1 = value;
                return Ok(());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    fn set_top_var(&mut self, n: usize, value: Cur<'a>) {
        let len = self.vars.len();
        if let Some(v) = self.vars.get_mut(len - n) {
            v.1 = value;
        }
    }

    fn var_value(&self, name: &str) -> R<Cur<'a>> {
        for v in self.vars.iter().rev() {
            if v.0 == name {
                return Ok(v.1.clone());
            }
        }
        Err(self.err(format!("undefined variable: {name}")))
    }

    // ---- walking -------------------------------------------------------------------------

    /// Appends `text` to the output, which may grow to [`MAX_OUTPUT_BYTES`].
    fn write(&mut self, text: &str) -> R<()> {
        if self.out.len().saturating_add(text.len()) > MAX_OUTPUT_BYTES {
            return Err(self.err(format_args!(
                "the output exceeds the limit of {MAX_OUTPUT_BYTES} bytes"
            )));
        }
        self.out.push_str(text);
        Ok(())
    }

    fn walk_list(&mut self, dot: &Cur<'a>, list: &'t List) -> R<()> {
        for n in list {
            self.walk(dot, n)?;
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Cur<'a>, node: &'t Node) -> R<()> {
        match node {
            Node::Text(t) => self.write(t),
            Node::Action(pipe) => {
                self.at = At::Pipe(pipe);
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    if v.is_nil() {
                        return self.write("<no value>");
                    }
                    let s = sprint_one(&v);
                    if let Some(error) = too_large("printing the value", &s) {
                        return Err(self.err(error));
                    }
                    return self.write(&s);
                }
                Ok(())
            }
            Node::If(b) => self.walk_if_or_with(false, dot, b),
            Node::With(b) => self.walk_if_or_with(true, dot, b),
            Node::Range(b) => self.walk_range(dot, b),
            Node::Template { pos, name, pipe } => {
                self.walk_template(dot, *pos, name, pipe.as_ref())
            }
            Node::Break => Err(Flow::Break),
            Node::Continue => Err(Flow::Continue),
        }
    }

    /// Fails once the thread's evaluation deadline has passed (see [`crate::deadline`]).
    fn check_budget(&self) -> R<()> {
        if crate::deadline::expired() {
            return Err(self.err(crate::deadline::BUDGET_EXCEEDED));
        }
        Ok(())
    }

    fn enter(&mut self) -> R<()> {
        self.nesting += 1;
        if self.nesting > MAX_NESTING {
            return Err(self.err(format!("exceeded maximum nesting depth ({MAX_NESTING})")));
        }
        Ok(())
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Cur<'a>, b: &'t Branch) -> R<()> {
        self.enter()?;
        let mark = self.mark();
        let r = self.walk_if_or_with_inner(with, dot, b);
        self.pop(mark);
        self.nesting -= 1;
        r
    }

    fn walk_if_or_with_inner(&mut self, with: bool, dot: &Cur<'a>, b: &'t Branch) -> R<()> {
        let val = self.eval_pipeline(dot, &b.pipe)?;
        if val.truth() {
            if with {
                self.walk_list(&Cur::val(val), &b.list)
            } else {
                self.walk_list(dot, &b.list)
            }
        } else if let Some(e) = &b.else_list {
            self.walk_list(dot, e)
        } else {
            Ok(())
        }
    }

    fn walk_range(&mut self, dot: &Cur<'a>, r: &'t Branch) -> R<()> {
        self.enter()?;
        let outer = self.mark();
        let res = self.walk_range_inner(dot, r);
        self.pop(outer);
        self.nesting -= 1;
        match res {
            Err(Flow::Break) => Ok(()),
            other => other,
        }
    }

    fn one_iteration(
        &mut self,
        r: &'t Branch,
        mark: usize,
        index: Value<'a>,
        elem: Cur<'a>,
    ) -> R<()> {
        self.check_budget()?;
        if !r.pipe.decl.is_empty() {
            self.set_top_var(1, elem.clone());
        }
        if r.pipe.decl.len() > 1 {
            self.set_top_var(2, Cur::val(index));
        }
        let res = self.walk_list(&elem, &r.list);
        self.pop(mark);
        match res {
            Err(Flow::Continue) => Ok(()),
            other => other,
        }
    }

    fn walk_range_inner(&mut self, dot: &Cur<'a>, r: &'t Branch) -> R<()> {
        self.at = At::Pos(r.pos, "range");
        let val = self.eval_pipeline(dot, &r.pipe)?;
        let mark = self.mark();
        match &val {
            Value::JArr(_) | Value::List(_) => {
                let items = val.seq_items().unwrap_or_default();
                if !items.is_empty() {
                    for (i, e) in items.into_iter().enumerate() {
                        self.one_iteration(r, mark, Value::Int(i as i64), Cur::elem(e))?;
                    }
                    return Ok(());
                }
            }
            Value::JObj(_) | Value::Dict(_) => {
                let entries = val.map_entries().unwrap_or_default();
                if !entries.is_empty() {
                    for (k, e) in entries {
                        self.one_iteration(r, mark, Value::string(k), Cur::elem(e))?;
                    }
                    return Ok(());
                }
            }
            Value::Int(n) | Value::Int64(n) => {
                if r.pipe.decl.len() > 1 {
                    return Err(
                        self.err("can't use integer to iterate over more than one variable")
                    );
                }
                let n = *n;
                let mk = |i: i64| {
                    if matches!(val, Value::Int(_)) {
                        Value::Int(i)
                    } else {
                        Value::Int64(i)
                    }
                };
                if n > 0 {
                    for i in 0..n {
                        self.one_iteration(r, mark, mk(i), Cur::val(mk(i)))?;
                    }
                    return Ok(());
                }
            }
            Value::Nil => {}
            other => {
                return Err(self.err(format!(
                    "range can't iterate over value of type {}",
                    other.type_name()
                )));
            }
        }
        if let Some(e) = &r.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    fn walk_template(
        &mut self,
        dot: &Cur<'a>,
        pos: usize,
        name: &'t str,
        pipe: Option<&'t Pipe>,
    ) -> R<()> {
        self.at = At::Pos(pos, "template");
        let Some(tree) = self.trees.get(name) else {
            return Err(self.err(format!("template {name:?} not defined")));
        };
        if self.depth >= MAX_EXEC_DEPTH {
            return Err(self.err(format!(
                "exceeded maximum template depth ({MAX_EXEC_DEPTH})"
            )));
        }
        self.check_budget()?;
        let new_dot = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Nil,
        };
        let saved_vars = std::mem::replace(
            &mut self.vars,
            vec![("$".to_owned(), Cur::val(new_dot.clone()))],
        );
        let saved_name = std::mem::replace(&mut self.tmpl_name, name);
        self.enter()?;
        self.depth += 1;
        let r = self.walk_list(&Cur::val(new_dot), tree);
        self.depth -= 1;
        self.nesting -= 1;
        self.tmpl_name = saved_name;
        self.vars = saved_vars;
        r
    }

    // ---- evaluation ----------------------------------------------------------------------

    fn eval_pipeline(&mut self, dot: &Cur<'a>, pipe: &'t Pipe) -> R<Value<'a>> {
        self.at = At::Pipe(pipe);
        self.enter()?;
        let mut value: Option<Value<'a>> = None;
        for cmd in &pipe.cmds {
            match self.eval_command(dot, cmd, value) {
                Ok(v) => value = Some(v.v),
                Err(e) => {
                    self.nesting -= 1;
                    return Err(e);
                }
            }
        }
        self.nesting -= 1;
        let value = value.unwrap_or(Value::Nil);
        for var in &pipe.decl {
            if pipe.is_assign {
                self.set_var(var, Cur::val(value.clone()))?;
            } else {
                self.vars.push((var.clone(), Cur::val(value.clone())));
            }
        }
        Ok(value)
    }

    fn not_a_function(&self, args: &'t [Arg], fin: &Option<Value<'a>>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return Err(self.err(format!(
                "can't give argument to non-function {}",
                args[0].describe()
            )));
        }
        Ok(())
    }

    fn eval_command(
        &mut self,
        dot: &Cur<'a>,
        cmd: &'t Command,
        fin: Option<Value<'a>>,
    ) -> R<Cur<'a>> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { ident, .. } => {
                self.at = At::Arg(first);
                return self.eval_field_chain(dot, dot.clone(), first, ident, &cmd.args, fin);
            }
            Arg::Chain { node, fields, .. } => {
                return self.eval_chain(dot, first, node, fields, &cmd.args, fin);
            }
            Arg::Identifier { name, .. } => {
                self.at = At::Arg(first);
                return self
                    .eval_function(dot, first, name, Some(&cmd.args), fin)
                    .map(Cur::val);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_pipeline(dot, p).map(Cur::val);
            }
            Arg::Variable { ident, .. } => {
                self.at = At::Arg(first);
                return self.eval_variable(dot, first, ident, &cmd.args, fin);
            }
            _ => {}
        }
        self.at = At::Arg(first);
        self.not_a_function(&cmd.args, &fin)?;
        Ok(match first {
            Arg::Bool(_, b) => Cur::val(Value::Bool(*b)),
            Arg::Dot(_) => Cur {
                v: dot.v.clone(),
                nil_iface: false,
            },
            Arg::Nil(_) => return Err(self.err("nil is not a command")),
            Arg::Number(_, n) => Cur::val(self.ideal_constant(n)?),
            Arg::Str(_, s) => Cur::val(Value::Str(Str::Borrowed(s))),
            _ => return Err(self.err(format!("can't evaluate command {:?}", first.describe()))),
        })
    }

    fn ideal_constant(&self, n: &Number) -> R<Value<'a>> {
        let t = n.text.as_str();
        let is_hex_int = t.len() > 2
            && t.starts_with('0')
            && matches!(t.as_bytes()[1], b'x' | b'X')
            && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if n.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(n.float64));
        }
        if n.is_int {
            return Ok(Value::Int(n.int64));
        }
        if n.is_uint {
            return Err(self.err(format!("{t} overflows int")));
        }
        Ok(Value::Nil)
    }

    fn eval_chain(
        &mut self,
        dot: &Cur<'a>,
        chain: &'t Arg,
        node: &'t Arg,
        fields: &'t [String],
        args: &'t [Arg],
        fin: Option<Value<'a>>,
    ) -> R<Cur<'a>> {
        self.at = At::Arg(chain);
        if fields.is_empty() {
            return Err(self.err("internal error: no fields in evalChainNode"));
        }
        if let Arg::Nil(_) = node {
            return Err(self.err(format!(
                "indirection through explicit nil in {}",
                chain.describe()
            )));
        }
        let recv = self.eval_arg(dot, None, node)?;
        self.at = At::Arg(chain);
        self.eval_field_chain(dot, recv, chain, fields, args, fin)
    }

    fn eval_variable(
        &mut self,
        dot: &Cur<'a>,
        node: &'t Arg,
        ident: &'t [String],
        args: &'t [Arg],
        fin: Option<Value<'a>>,
    ) -> R<Cur<'a>> {
        let value = self.var_value(&ident[0])?;
        if ident.len() == 1 {
            self.not_a_function(args, &fin)?;
            return Ok(value);
        }
        self.eval_field_chain(dot, value, node, &ident[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Cur<'a>,
        mut recv: Cur<'a>,
        node: &'t Arg,
        ident: &'t [String],
        args: &'t [Arg],
        fin: Option<Value<'a>>,
    ) -> R<Cur<'a>> {
        let n = ident.len();
        for id in &ident[..n - 1] {
            recv = self.eval_field(dot, id, node, &[], None, recv)?;
        }
        self.eval_field(dot, &ident[n - 1], node, args, fin, recv)
    }

    fn eval_field(
        &mut self,
        dot: &Cur<'a>,
        name: &'t str,
        node: &'t Arg,
        args: &'t [Arg],
        fin: Option<Value<'a>>,
        recv: Cur<'a>,
    ) -> R<Cur<'a>> {
        if recv.v.is_nil() {
            if recv.nil_iface {
                return Err(self.err(format!("nil pointer evaluating interface {{}}.{name}")));
            }
            if self.missing_error {
                return Err(self.err(format!("nil data; no entry for key {name:?}")));
            }
            return Ok(Cur::val(Value::Nil));
        }
        let has_args = args.len() > 1 || fin.is_some();
        if let Value::Time(_) = &recv.v
            && let Some(m) = funcs::time_method(name)
        {
            let v = self.eval_call(dot, m, name, node, Some(args), fin, Some(recv.v.clone()))?;
            return Ok(Cur::val(v));
        }
        if recv.v.is_map() {
            if has_args {
                return Err(self.err(format!("{name} is not a method but has arguments")));
            }
            return match recv.v.map_get(name) {
                Some(v) => Ok(Cur::elem(v)),
                None => {
                    if self.missing_error {
                        Err(self.err(format!("map has no entry for key {name:?}")))
                    } else {
                        Ok(Cur::val(Value::Nil))
                    }
                }
            };
        }
        let typ = if recv.nil_iface {
            "interface {}".to_owned()
        } else {
            recv.v.type_name()
        };
        Err(self.err(format!("can't evaluate field {name} in type {typ}")))
    }

    fn eval_function(
        &mut self,
        dot: &Cur<'a>,
        node: &'t Arg,
        name: &'t str,
        args: Option<&'t [Arg]>,
        fin: Option<Value<'a>>,
    ) -> R<Value<'a>> {
        let Some(f) = funcs::lookup(name) else {
            return Err(self.err(format!("{name:?} is not a defined function")));
        };
        self.eval_call(dot, f, name, node, args, fin, None)
    }

    /// Go's `evalCall`; `args` includes the function's own node at index 0 (or is `None`);
    /// `recv` is a method receiver, passed as the first argument.
    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Cur<'a>,
        f: Func,
        name: &'t str,
        node: &'t Arg,
        args: Option<&'t [Arg]>,
        fin: Option<Value<'a>>,
        recv: Option<Value<'a>>,
    ) -> R<Value<'a>> {
        let args: &'t [Arg] = match args {
            Some(a) if !a.is_empty() => &a[1..],
            _ => &[],
        };
        let params = f.params;
        let num_in = args.len() + usize::from(fin.is_some());
        let mut num_fixed = args.len();
        if f.variadic.is_some() {
            num_fixed = params.len();
            if num_in < num_fixed {
                return Err(self.err(format!(
                    "wrong number of args for {name}: want at least {} got {}",
                    params.len(),
                    args.len()
                )));
            }
        } else if num_in != params.len() {
            return Err(self.err(format!(
                "wrong number of args for {name}: want {} got {}",
                params.len(),
                num_in
            )));
        }

        if recv.is_none() && (name == "and" || name == "or") {
            let want = name == "or";
            let mut v = Value::Nil;
            for a in args {
                v = self.eval_arg(dot, Some(Param::Any), a)?.v;
                if v.truth() == want {
                    return Ok(v);
                }
            }
            if let Some(fv) = fin {
                v = fv;
            }
            return Ok(v);
        }

        let mut argv: Vec<Value<'a>> = Vec::with_capacity(num_in + 1);
        if let Some(r) = recv {
            argv.push(r);
        }
        let mut i = 0;
        while i < num_fixed && i < args.len() {
            let v = self.eval_arg(dot, Some(params[i]), &args[i])?;
            argv.push(v.v);
            i += 1;
        }
        if let Some(rest) = f.variadic {
            while i < args.len() {
                let v = self.eval_arg(dot, Some(rest), &args[i])?;
                argv.push(v.v);
                i += 1;
            }
        }
        if let Some(fv) = fin {
            let t = match f.variadic {
                Some(rest) => {
                    if num_in - 1 < num_fixed {
                        params[num_in - 1]
                    } else {
                        rest
                    }
                }
                None => params[params.len() - 1],
            };
            self.at = At::Arg(node);
            let v = self.validate_type(Cur::val(fv), Some(t))?;
            argv.push(v.v);
        }
        match (f.f)(argv) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at = At::Arg(node);
                Err(self.err(format!("error calling {name}: {e}")))
            }
        }
    }

    fn validate_type(&self, value: Cur<'a>, typ: Option<Param>) -> R<Cur<'a>> {
        let Some(typ) = typ else {
            return Ok(value);
        };
        if value.v.is_nil() {
            if value.nil_iface {
                if typ == Param::Any {
                    return Ok(Cur::val(Value::Nil));
                }
                return Err(self.err(format!(
                    "wrong type for value; expected {}; got interface {{}}",
                    typ.name()
                )));
            }
            if typ.can_be_nil() {
                return Ok(Cur::val(typ.nil_value()));
            }
            return Err(self.err(format!("invalid value; expected {}", typ.name())));
        }
        if !typ.accepts(&value.v) {
            return Err(self.err(format!(
                "wrong type for value; expected {}; got {}",
                typ.name(),
                value.v.type_name()
            )));
        }
        Ok(Cur::val(value.v))
    }

    fn eval_arg(&mut self, dot: &Cur<'a>, typ: Option<Param>, n: &'t Arg) -> R<Cur<'a>> {
        self.at = At::Arg(n);
        match n {
            Arg::Dot(_) => return self.validate_type(dot.clone(), typ),
            Arg::Nil(_) => {
                let t = typ.unwrap_or(Param::Any);
                if t.can_be_nil() {
                    return Ok(Cur::val(t.nil_value()));
                }
                return Err(self.err(format!("cannot assign nil to {}", t.name())));
            }
            Arg::Field { ident, .. } => {
                let v = self.eval_field_chain(
                    dot,
                    dot.clone(),
                    n,
                    ident,
                    std::slice::from_ref(n),
                    None,
                )?;
                self.at = At::Arg(n);
                return self.validate_type(v, typ);
            }
            Arg::Variable { ident, .. } => {
                let v = self.eval_variable(dot, n, ident, &[], None)?;
                self.at = At::Arg(n);
                return self.validate_type(v, typ);
            }
            Arg::Pipe(p) => {
                let v = self.eval_pipeline(dot, p)?;
                self.at = At::Arg(n);
                return self.validate_type(Cur::val(v), typ);
            }
            Arg::Identifier { name, .. } => {
                let v = self.eval_function(dot, n, name, None, None)?;
                self.at = At::Arg(n);
                return self.validate_type(Cur::val(v), typ);
            }
            Arg::Chain { node, fields, .. } => {
                let v = self.eval_chain(dot, n, node, fields, &[], None)?;
                self.at = At::Arg(n);
                return self.validate_type(v, typ);
            }
            _ => {}
        }
        let typ = typ.unwrap_or(Param::Any);
        let v = match (typ, n) {
            (Param::Bool, Arg::Bool(_, b)) => Value::Bool(*b),
            (Param::Bool, _) => {
                return Err(self.err(format!("expected bool; found {}", n.describe())));
            }
            (Param::Float, Arg::Number(_, num)) if num.is_float => Value::Float(num.float64),
            (Param::Float, _) => {
                return Err(self.err(format!("expected float; found {}", n.describe())));
            }
            (Param::Int, Arg::Number(_, num)) if num.is_int => Value::Int(num.int64),
            (Param::Int, _) => {
                return Err(self.err(format!("expected integer; found {}", n.describe())));
            }
            (Param::Str, Arg::Str(_, s)) => Value::Str(Str::Borrowed(s)),
            (Param::Str, _) => {
                return Err(self.err(format!("expected string; found {}", n.describe())));
            }
            (Param::Any, Arg::Bool(_, b)) => Value::Bool(*b),
            (Param::Any, Arg::Number(_, num)) => self.ideal_constant(num)?,
            (Param::Any, Arg::Str(_, s)) => Value::Str(Str::Borrowed(s)),
            _ => {
                return Err(self.err(format!(
                    "can't handle {} for arg of type {}",
                    n.describe(),
                    typ.name()
                )));
            }
        };
        Ok(Cur::val(v))
    }
}
