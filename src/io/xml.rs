//! Text escaped for XML 1.0 content and attribute values, shared by the XML writers (TMX,
//! TBX): `&`, `<`, `>` and `"` as entities; characters XML 1.0 does not allow (controls other
//! than tab, newline and carriage return, U+FFFE, U+FFFF) left out, so a written file always
//! parses.

/// Appends `text`, escaped, to `out`.
pub fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {}
            c => out.push(c),
        }
    }
}

/// `text`, escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_and_characters_xml_forbids_are_left_out() {
        assert_eq!(escape(r#"a<b & "c">"#), "a&lt;b &amp; &quot;c&quot;&gt;");
        assert_eq!(escape("tab\tnl\ncr\r bell\u{7} \u{FFFE}ü日"), "tab\tnl\ncr\r bell ü日");
    }
}
