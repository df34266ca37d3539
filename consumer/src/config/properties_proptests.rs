//! Property-based round trip of properties text: pairs written with Java's escapes (any
//! separator, line ending and continuation) parse back to the same pairs.

use proptest::collection::vec;
use proptest::prelude::*;

use super::properties::parse_properties;

/// `text` escaped for a properties file, as `java.util.Properties.store` would write it (every
/// space escaped, which is also valid in values), one escape per piece so a continuation can go
/// between any two pieces.
fn escaped_pieces(text: &str) -> Vec<String> {
    text.chars()
        .map(|c| match c {
            '\\' => "\\\\".to_owned(),
            ' ' => "\\ ".to_owned(),
            '=' => "\\=".to_owned(),
            ':' => "\\:".to_owned(),
            '#' => "\\#".to_owned(),
            '!' => "\\!".to_owned(),
            '\t' => "\\t".to_owned(),
            '\n' => "\\n".to_owned(),
            '\r' => "\\r".to_owned(),
            '\u{c}' => "\\f".to_owned(),
            other => other.to_string(),
        })
        .collect()
}

fn text(min_chars: usize) -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            4 => proptest::char::range('a', 'z'),
            1 => any::<char>(),
            1 => prop::sample::select(vec![' ', '=', ':', '\\', '#', '!', '\t', '\n', '\r', '\u{c}']),
        ],
        min_chars..16,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

#[derive(Debug, Clone)]
struct Layout {
    separator: &'static str,
    line_ending: &'static str,
    indent: &'static str,
    /// Where in the value's pieces a line continuation goes, if anywhere.
    continuation_at: Option<prop::sample::Index>,
}

fn layout() -> impl Strategy<Value = Layout> {
    (
        prop::sample::select(vec!["=", ":", " ", " = ", "\t:\t", "  "]),
        prop::sample::select(vec!["\n", "\r\n", "\r"]),
        prop::sample::select(vec!["", "  ", "\t", "\u{c}"]),
        proptest::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(separator, line_ending, indent, continuation_at)| Layout {
            separator,
            line_ending,
            indent,
            continuation_at,
        })
}

proptest! {
    #[test]
    fn escaped_pairs_parse_back(
        entries in vec((text(1), text(0), layout()), 0..8),
        comment in any::<bool>(),
    ) {
        let mut file = String::new();
        if comment {
            file.push_str("# written by the property test\n! also a comment\n\n");
        }
        for (key, value, layout) in &entries {
            file.push_str(layout.indent);
            file.push_str(&escaped_pieces(key).concat());
            file.push_str(layout.separator);
            let pieces = escaped_pieces(value);
            let split = layout.continuation_at.map(|at| at.index(pieces.len() + 1));
            for (i, piece) in pieces.iter().enumerate() {
                if split == Some(i) && i > 0 {
                    file.push('\\');
                    file.push_str(layout.line_ending);
                    file.push_str("   ");
                }
                file.push_str(piece);
            }
            file.push_str(layout.line_ending);
        }
        let expected: Vec<(String, String)> =
            entries.into_iter().map(|(key, value, _)| (key, value)).collect();
        prop_assert_eq!(parse_properties(&file).unwrap(), expected);
    }

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Ok(pairs) = parse_properties(&text) {
            prop_assert!(pairs.len() <= text.split(['\n', '\r']).count());
        }
    }
}
