//! Java `.properties` text, as `java.util.Properties.load` reads it, so a Java client's
//! `consumer.properties` works unchanged.
//!
//! Rules: lines end with `\n`, `\r` or `\r\n`; leading whitespace (space, tab, form feed) is
//! skipped; lines starting with `#` or `!` are comments; a line ending in an odd number of
//! backslashes continues on the next line, whose leading whitespace is dropped; the key ends at
//! the first unescaped `=`, `:` or whitespace, after which whitespace, one optional `=`/`:` and
//! more whitespace are skipped; `\t \n \r \f \uXXXX` are escapes and any other `\c` means `c`.

use super::error::ConfigError;

const WHITESPACE: &[char] = &[' ', '\t', '\u{c}'];

/// Parses properties text into `(key, value)` pairs in file order (a repeated key appears
/// twice; later pairs win when collected).
pub fn parse_properties(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::new();
    let mut logical: Option<(usize, String)> = None;
    for (index, physical) in physical_lines(text).enumerate() {
        let line = physical.trim_start_matches(WHITESPACE);
        let (start, mut buffer) = match logical.take() {
            Some(open) => open,
            None if line.is_empty() || line.starts_with(['#', '!']) => continue,
            None => (index + 1, String::new()),
        };
        let trailing_backslashes = line.len() - line.trim_end_matches('\\').len();
        if trailing_backslashes % 2 == 1 {
            buffer.push_str(&line[..line.len() - 1]);
            logical = Some((start, buffer));
        } else {
            buffer.push_str(line);
            pairs.push(key_value(start, &buffer)?);
        }
    }
    if let Some((start, buffer)) = logical {
        pairs.push(key_value(start, &buffer)?);
    }
    Ok(pairs)
}

fn physical_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find(['\n', '\r']) {
            Some(end) => {
                let terminator = if current[end..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = Some(&current[end + terminator..]);
                Some(&current[..end])
            }
            None => {
                rest = None;
                (!current.is_empty()).then_some(current)
            }
        }
    })
}

/// Splits one logical line (leading whitespace already gone) into its unescaped key and value.
fn key_value(line_number: usize, line: &str) -> Result<(String, String), ConfigError> {
    let mut key_end = line.len();
    let mut chars = line.char_indices();
    while let Some((at, c)) = chars.next() {
        if c == '\\' {
            chars.next();
        } else if c == '=' || c == ':' || WHITESPACE.contains(&c) {
            key_end = at;
            break;
        }
    }
    let rest = line[key_end..].trim_start_matches(WHITESPACE);
    let rest = rest.strip_prefix(['=', ':']).unwrap_or(rest);
    let value = rest.trim_start_matches(WHITESPACE);
    Ok((
        unescape(line_number, &line[..key_end])?,
        unescape(line_number, value)?,
    ))
}

fn unescape(line_number: usize, text: &str) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\u{c}'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4 && hex.chars().all(|h| h.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or(ConfigError::Properties {
                        line: line_number,
                        message: "malformed \\uXXXX escape",
                    })?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String)> {
        parse_properties(text).unwrap()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn separators() {
        let text = "a=1\nb: 2\nc 3\nd\t=\t4\ne   :5\nf\ng=\nh==x\ni:=y\n";
        assert_eq!(
            parse(text),
            pairs(&[
                ("a", "1"),
                ("b", "2"),
                ("c", "3"),
                ("d", "4"),
                ("e", "5"),
                ("f", ""),
                ("g", ""),
                ("h", "=x"),
                ("i", "=y"),
            ])
        );
    }

    #[test]
    fn comments_blank_lines_and_leading_whitespace() {
        let text = "# comment\n! also comment\n\n   \n   key = value  \n\t\u{c}x=1\n  # indented comment\n";
        assert_eq!(parse(text), pairs(&[("key", "value  "), ("x", "1")]));
    }

    #[test]
    fn line_terminators() {
        assert_eq!(
            parse("a=1\r\nb=2\rc=3"),
            pairs(&[("a", "1"), ("b", "2"), ("c", "3")])
        );
    }

    #[test]
    fn continuations() {
        let text = "list = a,\\\n       b,\\\n   c\nnext=1\n";
        assert_eq!(parse(text), pairs(&[("list", "a,b,c"), ("next", "1")]));
        // An even number of trailing backslashes is an escaped backslash, not a continuation.
        assert_eq!(parse("a=x\\\\\nb=y"), pairs(&[("a", "x\\"), ("b", "y")]));
        // A continuation line starting with '#' is data, not a comment.
        assert_eq!(parse("a=1\\\n#2"), pairs(&[("a", "1#2")]));
        // A comment line ending in a backslash does not continue.
        assert_eq!(parse("#c\\\na=1"), pairs(&[("a", "1")]));
        // A trailing backslash at the end of input is dropped.
        assert_eq!(parse("a=1\\"), pairs(&[("a", "1")]));
        // A continuation into a blank line ends the value.
        assert_eq!(parse("a=1\\\n\nb=2"), pairs(&[("a", "1"), ("b", "2")]));
    }

    #[test]
    fn escapes() {
        let text = r"k\=e\:y\ x = t\tn\nr\rf\f u\u0041\u00e9 back\\slash \q";
        let parsed = parse(text);
        assert_eq!(parsed[0].0, "k=e:y x");
        assert_eq!(parsed[0].1, "t\tn\nr\rf\u{c} uAé back\\slash q");
        assert_eq!(parse(r"\#notcomment=1"), pairs(&[("#notcomment", "1")]));
    }

    #[test]
    fn malformed_unicode_escape_names_the_line() {
        for bad in ["a=1\nb=\\u12", "a=1\nb=\\u12G4", "a=1\nb=\\uD800"] {
            assert_eq!(
                parse_properties(bad),
                Err(ConfigError::Properties {
                    line: 2,
                    message: "malformed \\uXXXX escape"
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn continued_pair_reports_its_first_line() {
        assert!(matches!(
            parse_properties("a=1\nb=x\\\n  \\u1"),
            Err(ConfigError::Properties { line: 2, .. })
        ));
    }
}
