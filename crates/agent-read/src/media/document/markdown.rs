//! Pipe tables, as Markdown writes them: the first row is the header, a `---` row follows it, and every row has the
//! table's width. A cell's own `|` is escaped and its line breaks become spaces, so a row stays one line.

/// Writes `rows` as a pipe table, one line per row, each followed by a newline.
pub fn pipe_table(rows: &[Vec<String>]) -> String {
    let width = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut out = String::new();
    for (index, row) in rows.iter().enumerate() {
        push_row(&mut out, row, width);
        if index == 0 {
            out.push('|');
            out.push_str(&" --- |".repeat(width));
            out.push('\n');
        }
    }
    out
}

/// Writes one row of `width` cells (missing cells empty).
pub fn push_row(out: &mut String, row: &[String], width: usize) {
    out.push('|');
    for column in 0..width {
        out.push(' ');
        push_cell(out, row.get(column).map_or("", String::as_str));
        out.push_str(" |");
    }
    out.push('\n');
}

/// A cell's text on one line: `|` escaped, runs of whitespace (line breaks included) as one space.
pub fn cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_cell(&mut out, text);
    out
}

/// Appends `text` as [`cell`] shows it (a table's rows are written a cell at a time, nothing allocated per cell).
pub fn push_cell(out: &mut String, text: &str) {
    for (index, word) in text.split_whitespace().enumerate() {
        if index > 0 {
            out.push(' ');
        }
        let mut rest = word;
        while let Some(bar) = memchr::memchr(b'|', rest.as_bytes()) {
            out.push_str(&rest[..bar]);
            out.push_str("\\|");
            rest = &rest[bar + 1..];
        }
        out.push_str(rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipe_tables_have_a_header_rule_and_even_rows() {
        let rows = vec![vec!["a".to_string(), "b|c".to_string()], vec!["line\nbreak".to_string()]];
        assert_eq!(pipe_table(&rows), "| a | b\\|c |\n| --- | --- |\n| line break |  |\n");
    }
}
