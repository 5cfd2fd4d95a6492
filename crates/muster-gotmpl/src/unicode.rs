//! Go's `unicode` predicates, on Unicode general categories.

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// Go's `unicode.IsLetter`.
pub(crate) fn is_letter(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
    )
}

/// Go's `unicode.IsDigit`.
pub(crate) fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    get_general_category(c) == G::DecimalNumber
}

/// The template lexer's identifier characters.
pub(crate) fn is_alpha_numeric(c: char) -> bool {
    c == '_' || is_letter(c) || is_digit(c)
}

/// Go's `unicode.IsPrint` restricted to ASCII.
pub(crate) fn is_print_ascii(c: char) -> bool {
    c.is_ascii() && (' '..='~').contains(&c)
}

/// Go's `unicode.IsPrint`: letters, marks, numbers, punctuation, symbols and the ASCII space.
pub(crate) fn is_print(c: char) -> bool {
    if c.is_ascii() {
        return (' '..='~').contains(&c);
    }
    !matches!(
        get_general_category(c),
        G::Control
            | G::Format
            | G::Surrogate
            | G::PrivateUse
            | G::Unassigned
            | G::SpaceSeparator
            | G::LineSeparator
            | G::ParagraphSeparator
    )
}

/// Go's `unicode.IsSpace`.
pub(crate) fn is_space(c: char) -> bool {
    match c {
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{85}' | '\u{A0}' => true,
        c if c.is_ascii() => false,
        c => matches!(
            get_general_category(c),
            G::SpaceSeparator | G::LineSeparator | G::ParagraphSeparator
        ),
    }
}

/// Go's `unicode.IsUpper`.
pub(crate) fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_uppercase();
    }
    get_general_category(c) == G::UppercaseLetter
}

/// Go's `unicode.IsLower`.
pub(crate) fn is_lower(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_lowercase();
    }
    get_general_category(c) == G::LowercaseLetter
}

/// Go's `unicode.IsTitle`.
pub(crate) fn is_title(c: char) -> bool {
    !c.is_ascii() && get_general_category(c) == G::TitlecaseLetter
}

/// Go's `unicode.IsPunct`.
pub(crate) fn is_punct(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// Go's `unicode.ToUpper` of one rune (simple case mapping).
pub(crate) fn to_upper(c: char) -> char {
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `unicode.ToLower` of one rune (simple case mapping).
pub(crate) fn to_lower(c: char) -> char {
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// Go's `unicode.ToTitle` of one rune.
pub(crate) fn to_title(c: char) -> char {
    // Title case differs from upper case only for a few digraphs.
    match c {
        'Ǆ' | 'ǅ' | 'ǆ' => 'ǅ',
        'Ǉ' | 'ǈ' | 'ǉ' => 'ǈ',
        'Ǌ' | 'ǋ' | 'ǌ' => 'ǋ',
        'Ǳ' | 'ǲ' | 'ǳ' => 'ǲ',
        _ => to_upper(c),
    }
}

/// Go's `strings.ToUpper`.
pub(crate) fn str_to_upper(s: &str) -> String {
    s.chars().map(to_upper).collect()
}

/// Go's `strings.ToLower`.
pub(crate) fn str_to_lower(s: &str) -> String {
    s.chars().map(to_lower).collect()
}
