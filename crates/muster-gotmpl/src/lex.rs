//! The lexer of Go's `text/template` (delimiters `{{` and `}}`), producing a token list.

use super::unicode::{is_alpha_numeric, is_print_ascii};

/// Token kinds, as in Go's `text/template/parse/lex.go`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // keywords
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

/// One token.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub(crate) typ: ItemType,
    pub(crate) pos: usize,
    pub(crate) val: String,
    pub(crate) line: usize,
}

impl Item {
    /// How Go describes the token in error messages.
    pub(crate) fn describe(&self) -> String {
        match self.typ {
            ItemType::Eof => "EOF".to_owned(),
            ItemType::Error => self.val.clone(),
            t if is_keyword(t) => format!("<{}>", self.val),
            _ => {
                if self.val.chars().count() > 10 {
                    let short: String = self.val.chars().take(10).collect();
                    format!("{short:?}...")
                } else {
                    format!("{:?}", self.val)
                }
            }
        }
    }
}

fn is_keyword(t: ItemType) -> bool {
    matches!(
        t,
        ItemType::Block
            | ItemType::Break
            | ItemType::Continue
            | ItemType::Dot
            | ItemType::Define
            | ItemType::Else
            | ItemType::End
            | ItemType::If
            | ItemType::Nil
            | ItemType::Range
            | ItemType::Template
            | ItemType::With
    )
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

const LEFT_DELIM: &str = "{{";
const RIGHT_DELIM: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";
const TRIM_MARKER_LEN: usize = 2;

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_space_byte(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn has_left_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space_byte(b[1])
}

fn has_right_trim_marker(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space_byte(b[0]) && b[1] == b'-'
}

#[derive(Clone, Copy)]
enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    InsideAction,
    Space,
    Identifier,
    Field,
    Variable,
    Char,
    Number,
    Quote,
    RawQuote,
}

struct Lexer<'s> {
    input: &'s str,
    pos: usize,
    start: usize,
    at_eof: bool,
    items: Vec<Item>,
    paren_depth: usize,
    line: usize,
    start_line: usize,
}

/// Lexes the whole input. The list ends with an `Eof` or an `Error` item.
pub(crate) fn lex(input: &str) -> Vec<Item> {
    let mut l = Lexer {
        input,
        pos: 0,
        start: 0,
        at_eof: false,
        items: Vec::new(),
        paren_depth: 0,
        line: 1,
        start_line: 1,
    };
    let mut state = Some(State::Text);
    while let Some(s) = state {
        state = l.step(s);
    }
    l.items
}

impl Lexer<'_> {
    fn step(&mut self, s: State) -> Option<State> {
        match s {
            State::Text => self.lex_text(),
            State::LeftDelim => self.lex_left_delim(),
            State::Comment => self.lex_comment(),
            State::RightDelim => self.lex_right_delim(),
            State::InsideAction => self.lex_inside_action(),
            State::Space => self.lex_space(),
            State::Identifier => self.lex_identifier(),
            State::Field => self.lex_field_or_variable(ItemType::Field),
            State::Variable => self.lex_variable(),
            State::Char => self.lex_char(),
            State::Number => self.lex_number(),
            State::Quote => self.lex_quote(),
            State::RawQuote => self.lex_raw_quote(),
        }
    }

    fn next(&mut self) -> Option<char> {
        if self.pos >= self.input.len() {
            self.at_eof = true;
            return None;
        }
        let c = self.input[self.pos..].chars().next()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    fn backup(&mut self) {
        if !self.at_eof
            && self.pos > 0
            && let Some(c) = self.input[..self.pos].chars().next_back()
        {
            self.pos -= c.len_utf8();
            if c == '\n' {
                self.line -= 1;
            }
        }
    }

    fn emit(&mut self, typ: ItemType) {
        self.items.push(Item {
            typ,
            pos: self.start,
            val: self.input[self.start..self.pos].to_owned(),
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn ignore(&mut self) {
        self.line += self.input[self.start..self.pos].matches('\n').count();
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.next() {
            Some(c) if valid.contains(c) => true,
            _ => {
                self.backup();
                false
            }
        }
    }

    fn accept_run(&mut self, valid: &str) {
        loop {
            match self.next() {
                Some(c) if valid.contains(c) => {}
                _ => break,
            }
        }
        self.backup();
    }

    fn errorf(&mut self, msg: String) -> Option<State> {
        self.items.push(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: msg,
            line: self.start_line,
        });
        None
    }

    fn lex_text(&mut self) -> Option<State> {
        if let Some(x) = self.input[self.pos..].find(LEFT_DELIM) {
            let ldn = LEFT_DELIM.len();
            self.pos += x;
            let mut trim_length = 0;
            if has_left_trim_marker(&self.input[self.pos + ldn..]) {
                let s = &self.input[self.start..self.pos];
                trim_length = s.len() - s.trim_end_matches(is_space).len();
            }
            self.pos -= trim_length;
            if self.pos > self.start {
                self.line += self.input[self.start..self.pos].matches('\n').count();
                self.emit(ItemType::Text);
            }
            self.pos += trim_length;
            self.ignore();
            return Some(State::LeftDelim);
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += self.input[self.start..self.pos].matches('\n').count();
            self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof);
        None
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let rest = &self.input[self.pos..];
        if has_right_trim_marker(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT_DELIM) {
            return (true, true);
        }
        if rest.starts_with(RIGHT_DELIM) {
            return (true, false);
        }
        (false, false)
    }

    fn lex_left_delim(&mut self) -> Option<State> {
        self.pos += LEFT_DELIM.len();
        let trim_space = has_left_trim_marker(&self.input[self.pos..]);
        let after_marker = if trim_space { TRIM_MARKER_LEN } else { 0 };
        if self.input[self.pos + after_marker..].starts_with(LEFT_COMMENT) {
            self.pos += after_marker;
            self.ignore();
            return Some(State::Comment);
        }
        self.emit(ItemType::LeftDelim);
        self.pos += after_marker;
        self.ignore();
        self.paren_depth = 0;
        Some(State::InsideAction)
    }

    fn lex_comment(&mut self) -> Option<State> {
        self.pos += LEFT_COMMENT.len();
        let Some(i) = self.input[self.pos..].find(RIGHT_COMMENT) else {
            return self.errorf("unclosed comment".to_owned());
        };
        self.pos += i + RIGHT_COMMENT.len();
        let (delim, trim_space) = self.at_right_delim();
        if !delim {
            return self.errorf("comment ends before closing delimiter".to_owned());
        }
        if trim_space {
            self.pos += TRIM_MARKER_LEN;
        }
        self.pos += RIGHT_DELIM.len();
        if trim_space {
            let rest = &self.input[self.pos..];
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
        }
        self.ignore();
        Some(State::Text)
    }

    fn lex_right_delim(&mut self) -> Option<State> {
        let trim_space = has_right_trim_marker(&self.input[self.pos..]);
        if trim_space {
            self.pos += TRIM_MARKER_LEN;
            self.ignore();
        }
        self.pos += RIGHT_DELIM.len();
        self.emit(ItemType::RightDelim);
        if trim_space {
            let rest = &self.input[self.pos..];
            self.pos += rest.len() - rest.trim_start_matches(is_space).len();
            self.ignore();
        }
        Some(State::Text)
    }

    fn lex_inside_action(&mut self) -> Option<State> {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return Some(State::RightDelim);
            }
            return self.errorf("unclosed left paren".to_owned());
        }
        let Some(r) = self.next() else {
            return self.errorf("unclosed action".to_owned());
        };
        match r {
            c if is_space(c) => {
                self.backup();
                return Some(State::Space);
            }
            '=' => self.emit(ItemType::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.errorf("expected :=".to_owned());
                }
                self.emit(ItemType::Declare);
            }
            '|' => self.emit(ItemType::Pipe),
            '"' => return Some(State::Quote),
            '`' => return Some(State::RawQuote),
            '$' => return Some(State::Variable),
            '\'' => return Some(State::Char),
            '.' => {
                let b = self.input.as_bytes();
                if self.pos < b.len() && !(b[self.pos].is_ascii_digit()) {
                    return Some(State::Field);
                }
                self.backup();
                return Some(State::Number);
            }
            '+' | '-' | '0'..='9' => {
                self.backup();
                return Some(State::Number);
            }
            c if is_alpha_numeric(c) => {
                self.backup();
                return Some(State::Identifier);
            }
            '(' => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            ')' => {
                self.emit(ItemType::RightParen);
                if self.paren_depth == 0 {
                    return self.errorf(format!("unexpected right paren {}", go_u(r)));
                }
                self.paren_depth -= 1;
            }
            c if is_print_ascii(c) => self.emit(ItemType::Char),
            c => return self.errorf(format!("unrecognized character in action: {}", go_u(c))),
        }
        Some(State::InsideAction)
    }

    fn lex_space(&mut self) -> Option<State> {
        let mut num_spaces = 0;
        while let Some(c) = self.peek() {
            if !is_space(c) {
                break;
            }
            self.next();
            num_spaces += 1;
        }
        let rest = &self.input[self.pos - 1..];
        if has_right_trim_marker(rest) && rest[TRIM_MARKER_LEN..].starts_with(RIGHT_DELIM) {
            self.backup();
            if num_spaces == 1 {
                return Some(State::RightDelim);
            }
        }
        self.emit(ItemType::Space);
        Some(State::InsideAction)
    }

    fn lex_identifier(&mut self) -> Option<State> {
        loop {
            match self.next() {
                Some(c) if is_alpha_numeric(c) => {}
                r => {
                    self.backup();
                    let word = self.input[self.start..self.pos].to_owned();
                    if !self.at_terminator() {
                        return self.errorf(format!("bad character {}", go_u_opt(r)));
                    }
                    if let Some(k) = keyword(&word) {
                        self.emit(k);
                    } else if word.starts_with('.') {
                        self.emit(ItemType::Field);
                    } else if word == "true" || word == "false" {
                        self.emit(ItemType::Bool);
                    } else {
                        self.emit(ItemType::Identifier);
                    }
                    return Some(State::InsideAction);
                }
            }
        }
    }

    fn lex_variable(&mut self) -> Option<State> {
        if self.at_terminator() {
            self.emit(ItemType::Variable);
            return Some(State::InsideAction);
        }
        self.lex_field_or_variable(ItemType::Variable)
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> Option<State> {
        if self.at_terminator() {
            if typ == ItemType::Variable {
                self.emit(ItemType::Variable);
            } else {
                self.emit(ItemType::Dot);
            }
            return Some(State::InsideAction);
        }
        let r = loop {
            let r = self.next();
            match r {
                Some(c) if is_alpha_numeric(c) => {}
                _ => {
                    self.backup();
                    break r;
                }
            }
        };
        if !self.at_terminator() {
            return self.errorf(format!("bad character {}", go_u_opt(r)));
        }
        self.emit(typ);
        Some(State::InsideAction)
    }

    fn at_terminator(&mut self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.input[self.pos..].starts_with(RIGHT_DELIM),
        }
    }

    fn lex_char(&mut self) -> Option<State> {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.errorf("unterminated character constant".to_owned()),
                },
                None | Some('\n') => {
                    return self.errorf("unterminated character constant".to_owned());
                }
                Some('\'') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemType::CharConstant);
        Some(State::InsideAction)
    }

    fn lex_number(&mut self) -> Option<State> {
        if !self.scan_number() {
            let text = self.input[self.start..self.pos].to_owned();
            return self.errorf(format!("bad number syntax: {text:?}"));
        }
        if let Some('+' | '-') = self.peek() {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let text = self.input[self.start..self.pos].to_owned();
                return self.errorf(format!("bad number syntax: {text:?}"));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        Some(State::InsideAction)
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 10 + 1 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 16 + 6 + 1 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if let Some(c) = self.peek()
            && is_alpha_numeric(c)
        {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.errorf("unterminated quoted string".to_owned()),
                },
                None | Some('\n') => return self.errorf("unterminated quoted string".to_owned()),
                Some('"') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemType::String);
        Some(State::InsideAction)
    }

    fn lex_raw_quote(&mut self) -> Option<State> {
        loop {
            match self.next() {
                None => return self.errorf("unterminated raw quoted string".to_owned()),
                Some('`') => break,
                Some(_) => {}
            }
        }
        self.emit(ItemType::RawString);
        Some(State::InsideAction)
    }
}

/// Go's `%#U` of a rune.
fn go_u(c: char) -> String {
    format!("U+{:04X} '{c}'", c as u32)
}

fn go_u_opt(c: Option<char>) -> String {
    match c {
        Some(c) => go_u(c),
        None => "U+FFFFFFFFFFFFFFFF".to_owned(),
    }
}
