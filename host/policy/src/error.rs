//! The single error type of this crate, with file positions.

use std::ops::Range;

/// Why a policy was rejected, and where.
///
/// Other TOML files of toolhost that embed policies (the toolbox file) report
/// their errors with this type too, made with [`PolicyError::at`] and
/// [`PolicyError::from_toml`], so every configuration error reads the same.
///
/// `line` and `column` are 1-based and point at the offending key or value
/// (columns count characters, not bytes). They are `None` when there is no
/// position to give: a missing required key, an unreadable file, or a policy
/// made with [`PolicyBuilder`](crate::PolicyBuilder).
///
/// Displays as `{origin}:{line}:{column}: {message}`, leaving out the parts
/// that are missing, e.g. `read.toml:7:8: unknown variant `rx`, expected `ro` or `rw``.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {message}", position(*.line, *.column))]
pub struct PolicyError {
    /// Where the policy came from: the file name (or path) given by the caller,
    /// or `<builder>` for programmatic policies.
    pub origin: String,
    /// 1-based line of the offending key or value, when known.
    pub line: Option<usize>,
    /// 1-based column (in characters) of the offending key or value, when known.
    pub column: Option<usize>,
    /// What is wrong, and where possible what is expected instead.
    pub message: String,
}

impl PolicyError {
    /// An error in the source named `origin`, with no position. The
    /// message is kept to one line: control characters it quotes from the
    /// file (a `\n` in a string value) are shown escaped.
    pub fn new(origin: impl Into<String>, message: impl Into<String>) -> PolicyError {
        PolicyError {
            origin: origin.into(),
            line: None,
            column: None,
            message: one_line(message.into()),
        }
    }

    /// An error pointing at the start of `span`, a byte range of `text`, the
    /// source named `origin`.
    pub fn at(
        origin: impl Into<String>,
        text: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> PolicyError {
        let (line, column) = line_column(text, span.start);
        PolicyError {
            line: Some(line),
            column: Some(column),
            ..PolicyError::new(origin, message)
        }
    }

    /// Converts an error of the TOML parser or deserializer on `text`, the
    /// source named `origin`, pointing at the error's span when it has one.
    pub fn from_toml(origin: impl Into<String>, text: &str, err: &toml::de::Error) -> PolicyError {
        let message = err.message().trim().to_owned();
        match err.span() {
            Some(span) => PolicyError::at(origin, text, span, message),
            None => PolicyError::new(origin, message),
        }
    }
}

/// `message` with its control characters escaped (`\n` → `\\n`), so an
/// error is one line whatever the file's strings hold.
fn one_line(message: String) -> String {
    if !message.chars().any(char::is_control) {
        return message;
    }
    message
        .chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Renders the `:{line}:{column}` part of an error, leaving out missing parts.
fn position(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        (Some(line), None) => format!(":{line}"),
        _ => String::new(),
    }
}

/// Where errors found while resolving a policy are reported.
///
/// `text` is the source the spans index into; without it (policies made by
/// the builder) errors carry no position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub origin: &'a str,
    pub text: Option<&'a str>,
}

impl Ctx<'_> {
    /// An error with no position.
    pub fn plain(&self, message: impl Into<String>) -> PolicyError {
        PolicyError::new(self.origin, message)
    }

    /// An error pointing at the start of `span` (a byte range of the source).
    pub fn at(&self, span: Range<usize>, message: impl Into<String>) -> PolicyError {
        match self.text {
            Some(text) => PolicyError::at(self.origin, text, span, message),
            None => self.plain(message),
        }
    }

    /// Converts an error of the TOML parser or deserializer.
    pub fn toml_error(&self, err: &toml::de::Error) -> PolicyError {
        match self.text {
            Some(text) => PolicyError::from_toml(self.origin, text, err),
            None => self.plain(err.message().trim()),
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`, as
/// [`PolicyError`] reports them.
///
/// An offset past the end, or inside a multi-byte character, is moved back to
/// the nearest character boundary rather than panicking.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..text.floor_char_boundary(offset)];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_quoting_control_characters_stays_one_line() {
        let err = PolicyError::at("t.toml", "a\nb", 2..3, "component `x\ny\t` is bad");
        assert_eq!(err.to_string(), "t.toml:2:1: component `x\\ny\\t` is bad");
    }

    #[test]
    fn display_omits_missing_parts() {
        let mut err = PolicyError {
            origin: "p.toml".into(),
            line: Some(3),
            column: Some(9),
            message: "bad".into(),
        };
        assert_eq!(err.to_string(), "p.toml:3:9: bad");
        err.column = None;
        assert_eq!(err.to_string(), "p.toml:3: bad");
        err.line = None;
        assert_eq!(err.to_string(), "p.toml: bad");
    }

    #[test]
    fn public_constructors_position_errors() {
        let text = "a = 1\nbé = \"x\"\n";
        let err = PolicyError::at("f.toml", text, 10..13, "bad");
        assert_eq!(err.to_string(), "f.toml:2:4: bad");
        assert_eq!(PolicyError::new("f.toml", "bad").to_string(), "f.toml: bad");

        let text = "a = 1\nb = \n";
        let toml_err = toml::from_str::<toml::Table>(text).unwrap_err();
        let err = PolicyError::from_toml("f.toml", text, &toml_err);
        assert_eq!((err.line, err.column), (Some(2), Some(5)));
        assert!(!err.message.contains('\n'), "{err:?}");
    }

    #[test]
    fn line_column_counts_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // `=` on line 2 is after `bé ` (4 bytes, 3 characters)
        assert_eq!(line_column(text, 10), (2, 4));
        // inside the two-byte `é`, and past the end: no panic
        assert_eq!(line_column(text, 8), (2, 2));
        assert_eq!(line_column(text, 999), (3, 1));
    }
}
