//! The parse tree of a template, as in Go's `text/template/parse/node.go`.

/// A list of nodes.
pub(crate) type List = Vec<Node>;

/// A node of a template body.
#[derive(Debug)]
pub(crate) enum Node {
    /// Plain text.
    Text(String),
    /// `{{ pipeline }}`
    Action(Pipe),
    /// `{{ if }}`
    If(Branch),
    /// `{{ with }}`
    With(Branch),
    /// `{{ range }}`
    Range(Branch),
    /// `{{ template "name" pipeline }}`
    Template {
        /// Byte offset.
        pos: usize,
        /// Name of the invoked template.
        name: String,
        /// The new dot.
        pipe: Option<Pipe>,
    },
    /// `{{ break }}`
    Break,
    /// `{{ continue }}`
    Continue,
}

/// The shared shape of `if`, `with` and `range`.
#[derive(Debug)]
pub(crate) struct Branch {
    /// Byte offset.
    pub(crate) pos: usize,
    /// The condition / value.
    pub(crate) pipe: Pipe,
    /// The body.
    pub(crate) list: List,
    /// The `else` body.
    pub(crate) else_list: Option<List>,
}

/// A pipeline with optional variable declarations.
#[derive(Debug)]
pub(crate) struct Pipe {
    /// Byte offset.
    pub(crate) pos: usize,
    /// `$x = …` rather than `$x := …`.
    pub(crate) is_assign: bool,
    /// Declared or assigned variables.
    pub(crate) decl: Vec<String>,
    /// The commands, in order.
    pub(crate) cmds: Vec<Command>,
}

/// A command: an operand followed by arguments.
#[derive(Debug)]
pub(crate) struct Command {
    /// The words.
    pub(crate) args: Vec<Arg>,
}

/// An operand.
#[derive(Debug)]
pub(crate) enum Arg {
    /// `.a.b`
    Field {
        /// Byte offset.
        pos: usize,
        /// Field names.
        ident: Vec<String>,
    },
    /// `$x.a.b`
    Variable {
        /// Byte offset.
        pos: usize,
        /// Variable name followed by field names.
        ident: Vec<String>,
    },
    /// A function name.
    Identifier {
        /// Byte offset.
        pos: usize,
        /// The name.
        name: String,
    },
    /// `(pipe).a.b`
    Chain {
        /// Byte offset.
        pos: usize,
        /// The receiver.
        node: Box<Arg>,
        /// Field names.
        fields: Vec<String>,
    },
    /// `(pipeline)`
    Pipe(Box<Pipe>),
    /// `.`
    Dot(usize),
    /// `nil`
    Nil(usize),
    /// `true` / `false`
    Bool(usize, bool),
    /// A number constant.
    Number(usize, Number),
    /// A string constant (unquoted).
    Str(usize, String),
}

/// A number constant with every interpretation Go allows.
#[derive(Debug, Clone)]
pub(crate) struct Number {
    /// The source text.
    pub(crate) text: String,
    /// Representable as `int64`.
    pub(crate) is_int: bool,
    /// Representable as `uint64`.
    pub(crate) is_uint: bool,
    /// Representable as `float64`.
    pub(crate) is_float: bool,
    /// The `int64` value.
    pub(crate) int64: i64,
    /// The `uint64` value.
    pub(crate) uint64: u64,
    /// The `float64` value.
    pub(crate) float64: f64,
}

impl Arg {
    /// Byte offset.
    pub(crate) fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Identifier { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Bool(pos, _)
            | Arg::Number(pos, _)
            | Arg::Str(pos, _) => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }

    /// The node as Go prints it in error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Arg::Field { ident, .. } => ident.iter().map(|i| format!(".{i}")).collect(),
            Arg::Variable { ident, .. } => ident.join("."),
            Arg::Identifier { name, .. } => name.clone(),
            Arg::Chain { node, fields, .. } => {
                let mut s = match node.as_ref() {
                    Arg::Pipe(_) => format!("({})", node.describe()),
                    n => n.describe(),
                };
                for f in fields {
                    s.push('.');
                    s.push_str(f);
                }
                s
            }
            Arg::Pipe(p) => p.describe(),
            Arg::Dot(_) => ".".to_owned(),
            Arg::Nil(_) => "nil".to_owned(),
            Arg::Bool(_, b) => b.to_string(),
            Arg::Number(_, n) => n.text.clone(),
            Arg::Str(_, s) => format!("{s:?}"),
        }
    }
}

impl Pipe {
    /// The pipeline as Go prints it in error messages.
    pub(crate) fn describe(&self) -> String {
        let mut s = String::new();
        if !self.decl.is_empty() {
            s.push_str(&self.decl.join(", "));
            s.push_str(if self.is_assign { " = " } else { " := " });
        }
        let cmds: Vec<String> = self
            .cmds
            .iter()
            .map(|c| {
                c.args
                    .iter()
                    .map(Arg::describe)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        s.push_str(&cmds.join(" | "));
        s
    }
}
