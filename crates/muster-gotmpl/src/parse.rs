//! The parser of Go's `text/template`, a port of `text/template/parse/parse.go`.

use std::collections::HashMap;

use super::ast::{Arg, Branch, Command, List, Node, Number, Pipe};
use super::lex::{Item, ItemType, lex};
use super::strconv::{parse_float, parse_int0, parse_uint0, unquote, unquote_char};

/// Nesting limit for parentheses and control structures (keeps recursion within a thread's
/// stack; Go allows more, but real templates stay far below).
const MAX_DEPTH: usize = 100;

/// The parsed templates: the main one and every `define`/`block`.
pub(crate) type TreeSet = HashMap<String, List>;

struct Parser<'f> {
    name: String,
    items: Vec<Item>,
    idx: usize,
    last_line: usize,
    vars: Vec<String>,
    range_depth: usize,
    depth: usize,
    has_function: &'f dyn Fn(&str) -> bool,
    trees: TreeSet,
}

type PResult<T> = Result<T, String>;

/// Parses `text` as template `name`; `has_function` tells which identifiers are functions.
pub(crate) fn parse(
    name: &str,
    text: &str,
    has_function: &dyn Fn(&str) -> bool,
) -> Result<TreeSet, String> {
    let mut p = Parser {
        name: name.to_owned(),
        items: lex(text),
        idx: 0,
        last_line: 1,
        vars: vec!["$".to_owned()],
        range_depth: 0,
        depth: 0,
        has_function,
        trees: TreeSet::new(),
    };
    let root = p.parse_root()?;
    p.add(name.to_owned(), root)?;
    Ok(p.trees)
}

/// Go's `parse.IsEmptyTree`.
fn is_empty_tree(list: &List) -> bool {
    list.iter().all(|n| match n {
        Node::Text(t) => t.trim_matches(|c: char| c.is_ascii_whitespace()).is_empty(),
        _ => false,
    })
}

impl Parser<'_> {
    fn errorf(&self, msg: impl std::fmt::Display) -> String {
        format!("template: {}:{}: {}", self.name, self.last_line, msg)
    }

    fn next(&mut self) -> Item {
        let it = self.items.get(self.idx).cloned().unwrap_or_else(|| Item {
            typ: ItemType::Eof,
            pos: 0,
            val: String::new(),
            line: self.last_line,
        });
        if self.idx < self.items.len() {
            self.idx += 1;
        }
        self.last_line = it.line;
        it
    }

    fn backup(&mut self) {
        self.idx = self.idx.saturating_sub(1);
    }

    fn peek(&mut self) -> Item {
        let it = self.next();
        self.backup();
        it
    }

    fn next_non_space(&mut self) -> Item {
        loop {
            let t = self.next();
            if t.typ != ItemType::Space {
                return t;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item {
        let t = self.next_non_space();
        self.backup();
        t
    }

    fn expect(&mut self, expected: ItemType, context: &str) -> PResult<Item> {
        let t = self.next_non_space();
        if t.typ != expected {
            return Err(self.unexpected(&t, context));
        }
        Ok(t)
    }

    fn unexpected(&self, t: &Item, context: &str) -> String {
        if t.typ == ItemType::Error {
            return self.errorf(&t.val);
        }
        self.errorf(format!("unexpected {} in {}", t.describe(), context))
    }

    fn add(&mut self, name: String, root: List) -> PResult<()> {
        match self.trees.get(&name) {
            Some(existing) if !is_empty_tree(existing) => {
                if !is_empty_tree(&root) {
                    return Err(self.errorf(format!(
                        "template: multiple definition of template {name:?}"
                    )));
                }
                Ok(())
            }
            _ => {
                self.trees.insert(name, root);
                Ok(())
            }
        }
    }

    fn parse_root(&mut self) -> PResult<List> {
        let mut root = List::new();
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let save = self.idx;
                self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.idx = save;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.push(n),
                Parsed::End => return Err(self.errorf("unexpected {{end}}")),
                Parsed::Else(_) => return Err(self.errorf("unexpected {{else}}")),
            }
        }
        Ok(root)
    }

    fn parse_definition(&mut self) -> PResult<()> {
        let context = "define clause";
        let t = self.next_non_space();
        if t.typ != ItemType::String && t.typ != ItemType::RawString {
            return Err(self.unexpected(&t, context));
        }
        let name = unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))?;
        self.expect(ItemType::RightDelim, context)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_owned()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let (list, end) = self.item_list()?;
        self.vars = saved_vars;
        self.range_depth = saved_range;
        if !matches!(end, Parsed::End) {
            return Err(self.errorf(format!("unexpected {} in {}", end.describe(), context)));
        }
        self.add(name, list)
    }

    fn item_list(&mut self) -> PResult<(List, Parsed)> {
        let mut list = List::new();
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.push(n),
                other => return Ok((list, other)),
            }
        }
        Err(self.errorf("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let t = self.next_non_space();
        match t.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text(t.val))),
            ItemType::LeftDelim => self.action(),
            _ => Err(self.unexpected(&t, "input")),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let t = self.next_non_space();
        match t.typ {
            ItemType::Block => return self.block_control().map(Parsed::Node),
            ItemType::Break => {
                return self
                    .break_control("break")
                    .map(|()| Parsed::Node(Node::Break));
            }
            ItemType::Continue => {
                return self
                    .break_control("continue")
                    .map(|()| Parsed::Node(Node::Continue));
            }
            ItemType::Else => return self.else_control(),
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            ItemType::If => return self.control("if").map(|b| Parsed::Node(Node::If(b))),
            ItemType::Range => return self.control("range").map(|b| Parsed::Node(Node::Range(b))),
            ItemType::Template => return self.template_control().map(Parsed::Node),
            ItemType::With => return self.control("with").map(|b| Parsed::Node(Node::With(b))),
            _ => {}
        }
        self.backup();
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Parsed::Node(Node::Action(pipe)))
    }

    fn break_control(&mut self, word: &str) -> PResult<()> {
        let t = self.next_non_space();
        if t.typ != ItemType::RightDelim {
            return Err(self.unexpected(&t, &format!("{{{{{word}}}}}")));
        }
        if self.range_depth == 0 {
            return Err(self.errorf(format!("{{{{{word}}}}} outside {{{{range}}}}")));
        }
        Ok(())
    }

    fn else_control(&mut self) -> PResult<Parsed> {
        let peek = self.peek_non_space();
        if peek.typ == ItemType::If || peek.typ == ItemType::With {
            // "else if" / "else with": the keyword stays pending.
            return Ok(Parsed::Else(true));
        }
        self.expect(ItemType::RightDelim, "else")?;
        Ok(Parsed::Else(false))
    }

    fn control(&mut self, context: &str) -> PResult<Branch> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.errorf("max nesting depth exceeded"));
        }
        let mark = self.vars.len();
        let r = self.control_inner(context);
        self.vars.truncate(mark);
        self.depth -= 1;
        r
    }

    fn control_inner(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        match next {
            Parsed::End => {}
            Parsed::Else(chained) => {
                let peek = self.peek().typ;
                if chained && context == "if" && peek == ItemType::If {
                    self.next();
                    else_list = Some(vec![Node::If(self.control("if")?)]);
                } else if chained && context == "with" && peek == ItemType::With {
                    self.next();
                    else_list = Some(vec![Node::With(self.control("with")?)]);
                } else {
                    let (l, next) = self.item_list()?;
                    if !matches!(next, Parsed::End) {
                        return Err(self.errorf(format!("expected end; found {}", next.describe())));
                    }
                    else_list = Some(l);
                }
            }
            Parsed::Node(_) => return Err(self.errorf("internal error: unexpected node")),
        }
        Ok(Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        let context = "block clause";
        let t = self.next_non_space();
        let name = self.parse_template_name(&t, context)?;
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        let saved_vars = std::mem::replace(&mut self.vars, vec!["$".to_owned()]);
        let saved_range = std::mem::replace(&mut self.range_depth, 0);
        let r = self.item_list();
        self.vars = saved_vars;
        self.range_depth = saved_range;
        let (list, end) = r?;
        if !matches!(end, Parsed::End) {
            return Err(self.errorf(format!("unexpected {} in {}", end.describe(), context)));
        }
        self.add(name.clone(), list)?;
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn template_control(&mut self) -> PResult<Node> {
        let context = "template clause";
        let t = self.next_non_space();
        let name = self.parse_template_name(&t, context)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(context, ItemType::RightDelim)?);
        }
        Ok(Node::Template {
            pos: t.pos,
            name,
            pipe,
        })
    }

    fn parse_template_name(&self, t: &Item, context: &str) -> PResult<String> {
        match t.typ {
            ItemType::String | ItemType::RawString => {
                unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))
            }
            _ => Err(self.unexpected(t, context)),
        }
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe {
            pos: start.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        loop {
            let v = self.peek_non_space();
            if v.typ != ItemType::Variable {
                break;
            }
            let save = self.idx;
            self.next();
            let next = self.peek_non_space();
            if next.typ == ItemType::Assign || next.typ == ItemType::Declare {
                pipe.is_assign = next.typ == ItemType::Assign;
                self.next_non_space();
                pipe.decl.push(v.val.clone());
                self.vars.push(v.val);
                break;
            } else if next.typ == ItemType::Char && next.val == "," {
                self.next_non_space();
                pipe.decl.push(v.val.clone());
                self.vars.push(v.val);
                if context == "range" && pipe.decl.len() < 2 {
                    match self.peek_non_space().typ {
                        ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                            continue;
                        }
                        _ => return Err(self.errorf("range can only initialize variables")),
                    }
                }
                return Err(self.errorf(format!("too many declarations in {context}")));
            } else {
                // Not a declaration: put the variable (and what follows) back.
                self.idx = save;
                break;
            }
        }
        loop {
            let t = self.next_non_space();
            if t.typ == end {
                self.check_pipeline(&pipe, context)?;
                return Ok(pipe);
            }
            match t.typ {
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return Err(self.unexpected(&t, context)),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.errorf(format!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args.first(),
                Some(Arg::Bool(..) | Arg::Dot(_) | Arg::Nil(_) | Arg::Number(..) | Arg::Str(..))
            ) {
                return Err(self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        self.peek_non_space();
        let mut cmd = Command { args: Vec::new() };
        loop {
            self.peek_non_space();
            if let Some(operand) = self.operand()? {
                cmd.args.push(operand);
            }
            let t = self.next();
            match t.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return Err(self.unexpected(&t, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.errorf("empty command"));
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ != ItemType::Field {
            return Ok(Some(node));
        }
        let chain_pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().typ == ItemType::Field {
            let f = self.next();
            fields.push(f.val[1..].to_owned());
        }
        Ok(Some(match node {
            Arg::Field { pos, mut ident } => {
                ident.extend(fields);
                Arg::Field { pos, ident }
            }
            Arg::Variable { pos, mut ident } => {
                ident.extend(fields);
                Arg::Variable { pos, ident }
            }
            Arg::Bool(..) | Arg::Str(..) | Arg::Number(..) | Arg::Nil(_) | Arg::Dot(_) => {
                return Err(self.errorf(format!("unexpected . after term {:?}", node.describe())));
            }
            other => Arg::Chain {
                pos: chain_pos,
                node: Box::new(other),
                fields,
            },
        }))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let t = self.next_non_space();
        Ok(Some(match t.typ {
            ItemType::Identifier => {
                if !(self.has_function)(&t.val) {
                    return Err(self.errorf(format!("function {:?} not defined", t.val)));
                }
                Arg::Identifier {
                    pos: t.pos,
                    name: t.val,
                }
            }
            ItemType::Dot => Arg::Dot(t.pos),
            ItemType::Nil => Arg::Nil(t.pos),
            ItemType::Variable => {
                let ident: Vec<String> = t.val.split('.').map(str::to_owned).collect();
                if !self.vars.iter().any(|v| *v == ident[0]) {
                    return Err(self.errorf(format!("undefined variable {:?}", ident[0])));
                }
                Arg::Variable { pos: t.pos, ident }
            }
            ItemType::Field => Arg::Field {
                pos: t.pos,
                ident: t.val[1..].split('.').map(str::to_owned).collect(),
            },
            ItemType::Bool => Arg::Bool(t.pos, t.val == "true"),
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                let n = new_number(&t.val, t.typ).map_err(|e| self.errorf(e))?;
                Arg::Number(t.pos, n)
            }
            ItemType::LeftParen => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(self.errorf("max nesting depth exceeded"));
                }
                let p = self.pipeline("parenthesized pipeline", ItemType::RightParen);
                self.depth -= 1;
                Arg::Pipe(Box::new(p?))
            }
            ItemType::String | ItemType::RawString => {
                let s = unquote(&t.val).ok_or_else(|| self.errorf("invalid syntax"))?;
                Arg::Str(t.pos, s)
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

/// What `textOrAction` produced.
enum Parsed {
    Node(Node),
    End,
    /// `{{else}}`; `true` when an `if`/`with` keyword follows.
    Else(bool),
}

impl Parsed {
    fn describe(&self) -> &'static str {
        match self {
            Parsed::Node(_) => "node",
            Parsed::End => "{{end}}",
            Parsed::Else(_) => "{{else}}",
        }
    }
}

/// Go's `newNumber`.
fn new_number(text: &str, typ: ItemType) -> Result<Number, String> {
    let mut n = Number {
        text: text.to_owned(),
        is_int: false,
        is_uint: false,
        is_float: false,
        int64: 0,
        uint64: 0,
        float64: 0.0,
    };
    match typ {
        ItemType::CharConstant => {
            let (r, _, tail) =
                unquote_char(&text[1..], '\'').ok_or_else(|| "invalid syntax".to_owned())?;
            if tail != "'" {
                return Err(format!("malformed character constant: {text}"));
            }
            n.int64 = i64::from(r);
            n.is_int = true;
            n.uint64 = u64::from(r);
            n.is_uint = true;
            n.float64 = f64::from(r);
            n.is_float = true;
            return Ok(n);
        }
        ItemType::Complex => return Err(format!("complex constants are not supported: {text}")),
        _ => {}
    }
    if text.ends_with('i') {
        return Err(format!("complex constants are not supported: {text}"));
    }
    let u = parse_uint0(text);
    if let Some(u) = u {
        n.is_uint = true;
        n.uint64 = u;
    }
    if let Some(i) = parse_int0(text) {
        n.is_int = true;
        n.int64 = i;
        if i == 0 {
            n.is_uint = true;
            n.uint64 = u.unwrap_or(0);
        }
    }
    if n.is_int {
        n.is_float = true;
        n.float64 = n.int64 as f64;
    } else if n.is_uint {
        n.is_float = true;
        n.float64 = n.uint64 as f64;
    } else if let Some(f) = parse_float(text) {
        if !text.contains(['.', 'e', 'E', 'p', 'P']) {
            return Err(format!("integer overflow: {text:?}"));
        }
        n.is_float = true;
        n.float64 = f;
        if !n.is_int
            && f.fract() == 0.0
            && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
        {
            n.is_int = true;
            n.int64 = f as i64;
        }
        if !n.is_uint && f.fract() == 0.0 && (0.0..1.844_674_407_370_955_2e19).contains(&f) {
            n.is_uint = true;
            n.uint64 = f as u64;
        }
    }
    if !n.is_int && !n.is_uint && !n.is_float {
        return Err(format!("illegal number syntax: {text:?}"));
    }
    Ok(n)
}
