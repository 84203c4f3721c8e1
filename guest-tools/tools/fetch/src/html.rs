//! A small, forgiving HTML-to-text converter.
//!
//! It drops comments and the content of `script`, `style`, `noscript`,
//! `template`, `svg`, `iframe`, `object` and `canvas`; turns block elements
//! into line breaks (headings get `#` marks, list items `-` or `N.`, table
//! cells ` | `); keeps `pre` text as it is; shows image alt text; collapses
//! other whitespace; and decodes character references. It never fails: any
//! input gives some text.

/// Elements whose content is dropped entirely.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas", "math",
];

/// Elements that start and end a line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "body",
    "caption",
    "center",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "header",
    "hgroup",
    "html",
    "legend",
    "li",
    "main",
    "nav",
    "option",
    "section",
    "summary",
    "tbody",
    "tfoot",
    "thead",
    "tr",
];

/// Elements separated from their surroundings by a blank line.
const PARAGRAPHS: &[&str] = &[
    "blockquote",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "ol",
    "p",
    "pre",
    "table",
    "title",
    "ul",
];

/// Converts an HTML document (or fragment) to readable plain text.
pub fn html_to_text(html: &str) -> String {
    let mut out = Out::default();
    let bytes = html.as_bytes();
    let mut i = 0;
    let mut pre = 0usize;
    let mut lists: Vec<Option<usize>> = vec![];
    let mut cells_in_row = 0usize;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            let next = find_byte(bytes, i, b'<').unwrap_or(bytes.len());
            out.text(&decode_entities(&html[i..next]), pre > 0);
            i = next;
            continue;
        }
        let rest = &html[i..];
        if rest.starts_with("<!--") {
            i = find_str(html, i + 4, "-->").map_or(bytes.len(), |e| e + 3);
            continue;
        }
        if rest.starts_with("<![CDATA[") {
            let end = find_str(html, i + 9, "]]>").unwrap_or(bytes.len());
            out.text(&html[i + 9..end], pre > 0);
            i = (end + 3).min(bytes.len());
            continue;
        }
        if rest.starts_with("<!") || rest.starts_with("<?") {
            i = find_byte(bytes, i, b'>').map_or(bytes.len(), |e| e + 1);
            continue;
        }
        let closing = bytes.get(i + 1) == Some(&b'/');
        let name_start = i + 1 + usize::from(closing);
        let mut name_end = name_start;
        while name_end < bytes.len() && bytes[name_end].is_ascii_alphanumeric() {
            name_end += 1;
        }
        if name_end == name_start || !bytes[name_start].is_ascii_alphabetic() {
            // Not a tag: a literal `<`.
            out.text("<", pre > 0);
            i += 1;
            continue;
        }
        let name = html[name_start..name_end].to_ascii_lowercase();
        let tag_end = tag_end(bytes, name_end);
        let attrs_end = if bytes.get(tag_end.wrapping_sub(1)) == Some(&b'>') {
            tag_end - 1
        } else {
            tag_end
        };
        let attrs = html.get(name_end..attrs_end).unwrap_or("");
        i = tag_end;

        if !closing && SKIPPED.contains(&name.as_str()) {
            let close = format!("</{name}");
            i = match find_ci(html, i, &close) {
                Some(at) => find_byte(bytes, at, b'>').map_or(bytes.len(), |e| e + 1),
                None => bytes.len(),
            };
            continue;
        }
        match (name.as_str(), closing) {
            ("br", _) => out.line_break(),
            ("hr", false) => {
                out.block(1);
                out.raw("----");
                out.block(1);
            }
            ("pre", false) => {
                out.block(2);
                pre += 1;
            }
            ("pre", true) => {
                pre = pre.saturating_sub(1);
                out.block(2);
            }
            ("ul", false) => {
                lists.push(None);
                out.block(if lists.len() == 1 { 2 } else { 1 });
            }
            ("ol", false) => {
                lists.push(Some(0));
                out.block(if lists.len() == 1 { 2 } else { 1 });
            }
            ("ul" | "ol", true) => {
                lists.pop();
                out.block(if lists.is_empty() { 2 } else { 1 });
            }
            ("li", false) => {
                out.block(1);
                let indent = "  ".repeat(lists.len().saturating_sub(1));
                let marker = match lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{indent}{n}. ")
                    }
                    _ => format!("{indent}- "),
                };
                out.raw(&marker);
            }
            ("tr", _) => {
                cells_in_row = 0;
                out.block(1);
            }
            ("td" | "th", false) => {
                if cells_in_row > 0 {
                    out.raw(" | ");
                }
                cells_in_row += 1;
            }
            ("img", false) => {
                if let Some(alt) = attr(attrs, "alt").filter(|a| !a.trim().is_empty()) {
                    out.text(&format!(" [image: {}] ", alt.trim()), false);
                }
            }
            (h, false) if is_heading(h) => {
                out.block(2);
                let level = usize::from(h.as_bytes()[1] - b'0');
                out.raw(&format!("{} ", "#".repeat(level)));
            }
            (n, _) if PARAGRAPHS.contains(&n) => out.block(2),
            (n, _) if BLOCKS.contains(&n) => out.block(1),
            // Inline elements only separate words where the source does.
            _ => {}
        }
    }
    out.finish()
}

fn is_heading(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() == 2 && b[0] == b'h' && (b'1'..=b'6').contains(&b[1])
}

/// Index just past the `>` that ends a tag whose attributes start at `from`
/// (quotes respected), or the end of input.
fn tag_end(bytes: &[u8], from: usize) -> usize {
    let mut quote: Option<u8> = None;
    let mut i = from;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return i + 1,
            None => {}
        }
        i += 1;
    }
    bytes.len()
}

/// The decoded value of attribute `name` in a tag's attribute text.
fn attr(attrs: &str, name: &str) -> Option<String> {
    let bytes = attrs.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'=' {
            i += 1;
        }
        let key = attrs.get(start..i).unwrap_or("");
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = "";
        if bytes.get(i) == Some(&b'=') {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            match bytes.get(i) {
                Some(&q) if q == b'"' || q == b'\'' => {
                    let end = find_byte(bytes, i + 1, q).unwrap_or(bytes.len());
                    value = attrs.get(i + 1..end).unwrap_or("");
                    i = (end + 1).min(bytes.len());
                }
                _ => {
                    let s = i;
                    while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                        i += 1;
                    }
                    value = attrs.get(s..i).unwrap_or("");
                }
            }
        }
        if key.eq_ignore_ascii_case(name) {
            return Some(decode_entities(value));
        }
        if i == start {
            i += 1;
        }
    }
    None
}

fn find_byte(bytes: &[u8], from: usize, b: u8) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&c| c == b)
        .map(|p| p + from)
}

fn find_str(hay: &str, from: usize, needle: &str) -> Option<usize> {
    hay.get(from..)?.find(needle).map(|p| p + from)
}

/// Case-insensitive (ASCII) search for `needle` in `hay` from `from`.
fn find_ci(hay: &str, from: usize, needle: &str) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || h.len() < n.len() {
        return None;
    }
    (from..=h.len() - n.len()).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// Decodes character references (`&amp;`, `&#39;`, `&#x27;`, common named
/// ones). Unknown references are kept as they are.
pub fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let semi = rest.as_bytes().iter().take(33).position(|&b| b == b';');
        let decoded = semi.and_then(|end| {
            let body = &rest[1..end];
            decode_reference(body).map(|c| (c, end + 1))
        });
        match decoded {
            Some((text, len)) => {
                out.push_str(text.as_ref());
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode_reference(body: &str) -> Option<std::borrow::Cow<'static, str>> {
    use std::borrow::Cow;
    if let Some(num) = body.strip_prefix('#') {
        let code = match num.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => num.parse::<u32>().ok()?,
        };
        let c = match code {
            0 => '\u{fffd}',
            // Windows-1252 quirks that pages still use.
            0x91 => '\u{2018}',
            0x92 => '\u{2019}',
            0x93 => '\u{201c}',
            0x94 => '\u{201d}',
            0x96 => '\u{2013}',
            0x97 => '\u{2014}',
            _ => char::from_u32(code).unwrap_or('\u{fffd}'),
        };
        return Some(Cow::Owned(c.to_string()));
    }
    let s = match body {
        "amp" => "&",
        "lt" => "<",
        "gt" => ">",
        "quot" => "\"",
        "apos" => "'",
        "nbsp" => " ",
        "ensp" | "emsp" | "thinsp" => " ",
        "shy" | "zwj" | "zwnj" => "",
        "mdash" => "\u{2014}",
        "ndash" => "\u{2013}",
        "hellip" => "\u{2026}",
        "lsquo" => "\u{2018}",
        "rsquo" => "\u{2019}",
        "sbquo" => "\u{201a}",
        "ldquo" => "\u{201c}",
        "rdquo" => "\u{201d}",
        "bdquo" => "\u{201e}",
        "laquo" => "\u{ab}",
        "raquo" => "\u{bb}",
        "lsaquo" => "\u{2039}",
        "rsaquo" => "\u{203a}",
        "bull" => "\u{2022}",
        "middot" => "\u{b7}",
        "copy" => "\u{a9}",
        "reg" => "\u{ae}",
        "trade" => "\u{2122}",
        "deg" => "\u{b0}",
        "plusmn" => "\u{b1}",
        "times" => "\u{d7}",
        "divide" => "\u{f7}",
        "minus" => "\u{2212}",
        "euro" => "\u{20ac}",
        "pound" => "\u{a3}",
        "yen" => "\u{a5}",
        "cent" => "\u{a2}",
        "sect" => "\u{a7}",
        "para" => "\u{b6}",
        "dagger" => "\u{2020}",
        "Dagger" => "\u{2021}",
        "larr" => "\u{2190}",
        "rarr" => "\u{2192}",
        "uarr" => "\u{2191}",
        "darr" => "\u{2193}",
        "harr" => "\u{2194}",
        "le" => "\u{2264}",
        "ge" => "\u{2265}",
        "ne" => "\u{2260}",
        "asymp" => "\u{2248}",
        "infin" => "\u{221e}",
        "frac12" => "\u{bd}",
        "frac14" => "\u{bc}",
        "frac34" => "\u{be}",
        "iexcl" => "\u{a1}",
        "iquest" => "\u{bf}",
        "eacute" => "\u{e9}",
        "egrave" => "\u{e8}",
        "agrave" => "\u{e0}",
        "aacute" => "\u{e1}",
        "auml" => "\u{e4}",
        "ouml" => "\u{f6}",
        "uuml" => "\u{fc}",
        "Auml" => "\u{c4}",
        "Ouml" => "\u{d6}",
        "Uuml" => "\u{dc}",
        "szlig" => "\u{df}",
        "ccedil" => "\u{e7}",
        "ntilde" => "\u{f1}",
        "hearts" => "\u{2665}",
        "check" => "\u{2713}",
        _ => return None,
    };
    Some(Cow::Borrowed(s))
}

/// The text being built.
#[derive(Default)]
struct Out {
    s: String,
    /// Whitespace seen since the last visible character.
    space: bool,
    /// Newlines at the end of `s`.
    newlines: usize,
}

impl Out {
    fn text(&mut self, t: &str, pre: bool) {
        if pre {
            for c in t.chars().filter(|&c| c != '\r') {
                self.s.push(c);
                self.newlines = if c == '\n' { self.newlines + 1 } else { 0 };
            }
            self.space = false;
            return;
        }
        for c in t.chars() {
            if c.is_whitespace() {
                self.space = true;
            } else {
                if self.space && !self.s.is_empty() && !self.s.ends_with([' ', '\n']) {
                    self.s.push(' ');
                }
                self.space = false;
                self.s.push(c);
                self.newlines = 0;
            }
        }
    }

    /// Text inserted as is (list markers, separators).
    fn raw(&mut self, t: &str) {
        self.s.push_str(t);
        self.space = false;
        self.newlines = 0;
    }

    /// Ends the current line; `n = 2` leaves a blank line.
    fn block(&mut self, n: usize) {
        self.space = false;
        if self.s.is_empty() {
            return;
        }
        while self.newlines < n {
            self.trim_line_end();
            self.s.push('\n');
            self.newlines += 1;
        }
    }

    fn line_break(&mut self) {
        self.space = false;
        if self.newlines < 2 {
            self.trim_line_end();
            self.s.push('\n');
            self.newlines += 1;
        }
    }

    fn trim_line_end(&mut self) {
        while self.s.ends_with(' ') {
            self.s.pop();
        }
    }

    fn finish(self) -> String {
        let mut out = String::with_capacity(self.s.len());
        let mut blank = 0;
        for line in self.s.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                blank += 1;
                if blank > 1 || out.is_empty() {
                    continue;
                }
            } else {
                blank = 0;
            }
            out.push_str(line);
            out.push('\n');
        }
        while out.ends_with('\n') {
            out.pop();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page() {
        let html = r#"<!DOCTYPE html>
<html><head><title>My  Page</title>
<meta charset="utf-8"><style>body { color: red; } p > a {}</style>
<script type="text/javascript">if (a < b && c > d) { document.write("<p>x</p>"); }</script>
</head>
<body>
<!-- a comment with <p>tags</p> -->
<h1>Hello,   world</h1>
<p>First <b>bold</b> paragraph
spanning lines.</p><p>Second&nbsp;one &amp; more &lt;tags&gt; &#39;q&#39; &#x2014; &copy; &unknown; AT&T</p>
<ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul>
<table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>
<pre>  keep
    this</pre>
<img src="x.png" alt="A &quot;cat&quot;"> line<br>break
<noscript>enable js</noscript><SCRIPT>bad()</SCRIPT >end
</body></html>"#;
        let text = html_to_text(html);
        let expected = "My Page

# Hello, world

First bold paragraph spanning lines.

Second one & more <tags> 'q' \u{2014} \u{a9} &unknown; AT&T

- one
- two
  1. a
  2. b

k | v
1 | 2

  keep
    this

[image: A \"cat\"] line
break end";
        assert_eq!(text, expected);
    }

    #[test]
    fn robust_to_garbage() {
        assert_eq!(html_to_text(""), "");
        assert_eq!(html_to_text("plain text"), "plain text");
        assert_eq!(html_to_text("a < b and c <= d"), "a < b and c <= d");
        assert_eq!(html_to_text("<p title=\"caf\u{e9}"), "");
        assert_eq!(html_to_text("<p>unclosed"), "unclosed");
        assert_eq!(html_to_text("<script>never closed"), "");
        assert_eq!(html_to_text("x <!-- never closed"), "x");
        assert_eq!(html_to_text("<a href='>'>link</a> after"), "link after");
        assert_eq!(html_to_text("<div title=\"a>b\">x</div>"), "x");
        assert_eq!(
            html_to_text("caf\u{e9} <i>\u{1f600}</i>"),
            "caf\u{e9} \u{1f600}"
        );
        assert_eq!(html_to_text("<"), "<");
        assert_eq!(
            html_to_text("&#0; &#xZZ; &#99999999;"),
            "\u{fffd} &#xZZ; \u{fffd}"
        );
    }

    #[test]
    fn entities() {
        assert_eq!(decode_entities("a &amp; b"), "a & b");
        assert_eq!(decode_entities("&lt;&gt;&quot;&apos;"), "<>\"'");
        assert_eq!(decode_entities("&#65;&#x42;"), "AB");
        assert_eq!(decode_entities("& alone"), "& alone");
        assert_eq!(decode_entities("&amp"), "&amp");
    }

    #[test]
    fn attributes() {
        assert_eq!(attr(r#" src="a" alt='b c'"#, "alt").as_deref(), Some("b c"));
        assert_eq!(attr(" ALT=x width=3", "alt").as_deref(), Some("x"));
        assert_eq!(attr(" disabled alt", "alt").as_deref(), Some(""));
        assert_eq!(attr(" src=a", "alt"), None);
    }
}
