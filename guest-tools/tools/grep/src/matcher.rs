//! A regular expression confined to single lines, searchable over a whole
//! buffer of lines at once.
//!
//! Searching line by line costs a regex call per line; searching the buffer
//! costs one call per match, but a plain regex may then match across a line
//! break (`[^x]` and `\s` match `\n`). As ripgrep does, the pattern's syntax
//! tree is rewritten before it is compiled: `\n` is removed from every class,
//! `\A`/`\z` become line anchors, and `^`/`$` match at line boundaries (also
//! before a `\r\n`). The result matches in a buffer exactly where the original
//! pattern matches within one line, so every match found in the buffer is a
//! matching line.

use regex_automata::meta::Regex;
use regex_syntax::hir::{
    Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind,
    Look, Repetition,
};

/// Largest compiled program size, so a pathological pattern fails cleanly.
const SIZE_LIMIT: usize = 16 << 20;

/// Compiles `pattern` for line-confined buffer search.
///
/// Fails with a message for the model when the pattern is not valid or can
/// only match a line break (such a pattern can never match within a line).
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, String> {
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .crlf(true)
        .build()
        .parse(pattern)
        .map_err(|e| format!("invalid regex: {e}"))?;
    let hir = confine(&hir)?;
    Regex::builder()
        .configure(Regex::config().nfa_size_limit(Some(SIZE_LIMIT)))
        .build_from_hir(&hir)
        .map_err(|e| format!("invalid regex: {e}"))
}

/// Rewrites `hir` so that it cannot match a line break.
fn confine(hir: &Hir) -> Result<Hir, String> {
    Ok(match hir.kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(lit) => {
            if lit.0.contains(&b'\n') {
                return Err(
                    "the pattern matches a line break (\\n); grep matches within single lines, \
                     so search for the text of one line"
                        .into(),
                );
            }
            Hir::literal(lit.0.clone())
        }
        HirKind::Class(Class::Unicode(class)) => {
            let mut class = class.clone();
            class.difference(&ClassUnicode::new([ClassUnicodeRange::new('\n', '\n')]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(class)) => {
            let mut class = class.clone();
            class.difference(&ClassBytes::new([ClassBytesRange::new(b'\n', b'\n')]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(match look {
            Look::Start => Look::StartCRLF,
            Look::End => Look::EndCRLF,
            other => *other,
        }),
        HirKind::Repetition(rep) => Hir::repetition(Repetition {
            sub: Box::new(confine(&rep.sub)?),
            ..rep.clone()
        }),
        HirKind::Capture(cap) => Hir::capture(Capture {
            sub: Box::new(confine(&cap.sub)?),
            ..cap.clone()
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(confine).collect::<Result<_, _>>()?),
        HirKind::Alternation(subs) => {
            Hir::alternation(subs.iter().map(confine).collect::<Result<_, _>>()?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines (1-based) that contain a match when the buffer is searched.
    fn lines(pattern: &str, text: &str) -> Vec<usize> {
        let re = compile(pattern, false).unwrap();
        let mut out = vec![];
        for m in re.find_iter(text.as_bytes()) {
            assert!(
                !text[m.start()..m.end()].contains('\n'),
                "{pattern:?} matched across lines"
            );
            let line = text[..m.start()].matches('\n').count() + 1;
            if out.last() != Some(&line) {
                out.push(line);
            }
        }
        out
    }

    #[test]
    fn classes_and_anchors_stay_within_a_line() {
        let text = "ab\ncd\r\nef\nxx ab\n";
        assert_eq!(lines(r"[^x]+", "xx\nab\n"), vec![2]);
        assert_eq!(lines(r"b\s*c", text), Vec::<usize>::new());
        assert_eq!(lines(r"^ab$", text), vec![1]);
        assert_eq!(lines(r"cd$", text), vec![2]);
        assert_eq!(lines(r"\Aef\z", text), vec![3]);
        assert_eq!(lines(r"^x", text), vec![4]);
        assert_eq!(lines(r"(?s).+f", text), vec![3]);
        assert_eq!(lines(r"\bab\b", text), vec![1, 4]);
    }

    #[test]
    fn line_break_literals_and_bad_patterns_are_refused() {
        assert!(compile(r"a\nb", false).unwrap_err().contains("line break"));
        assert!(compile("(unclosed", false).unwrap_err().contains("regex"));
        assert!(compile(r"\w{100000}{100000}", false).is_err());
    }

    #[test]
    fn case_insensitive() {
        let re = compile("fn", true).unwrap();
        assert!(re.is_match("FN gamma".as_bytes()));
    }
}
