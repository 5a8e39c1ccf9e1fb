//! What the model sees of a document converted to text (DOCX, XLSX, PPTX, HTML): a document without units is its
//! converted text alone; a workbook's sheets and a presentation's slides each stand under a
//! `── sheet 2 of 3: Costs ──` header with their text behind the [gutter](super::GUTTER), so that no cell or shape
//! can print a header of its own. And the footer's notices: what was converted from what, the units by number and
//! name, where the text stopped. `crate::media::document` converts and hands the facts over.

use super::{human_size, push_gutter_block};

/// Unit names the footer lists at most.
const MAX_NAMES_LISTED: usize = 20;

/// One converted unit, as rendering needs it.
#[derive(Debug, Clone, Copy)]
pub struct UnitView<'a> {
    /// Its number, from 1.
    pub number: u32,
    /// Its name (a sheet's name, a slide's title).
    pub title: Option<&'a str>,
    /// Its converted text.
    pub text: &'a str,
}

/// What a conversion gave, as rendering needs it.
#[derive(Debug, Clone)]
pub struct Conversion<'a> {
    /// The format, in words (`Excel workbook (XLSX)`).
    pub description: &'static str,
    /// What a unit is called (`sheet`, `slide`), or `None` for one flow of text.
    pub unit: Option<&'static str>,
    /// The chosen units, in order.
    pub units: Vec<UnitView<'a>>,
    /// Units in the whole document.
    pub unit_count: u32,
    /// The names of every unit, in order (sheets; empty when units have none).
    pub names: &'a [String],
    /// False when the text stopped at `max_bytes`.
    pub complete: bool,
    /// The most text one conversion gives.
    pub max_bytes: u64,
}

/// How a unit's header line starts (`── sheet `), for `find` to name the unit beside a match.
pub fn unit_header_start(unit: &str) -> &'static str {
    match unit {
        "sheet" => "── sheet ",
        "slide" => "── slide ",
        _ => "── page ",
    }
}

/// The converted text as the model reads it; every line, the last included, ends with `\n` (nothing when empty).
pub fn render(conversion: &Conversion<'_>) -> String {
    let Some(unit) = conversion.unit else {
        let text = conversion.units.first().map_or("", |u| u.text);
        return if text.is_empty() { String::new() } else { format!("{text}\n") };
    };
    let mut out = String::new();
    for piece in &conversion.units {
        out.push_str(&format!("{}{} of {}", unit_header_start(unit), piece.number, conversion.unit_count));
        if let Some(title) = piece.title.map(one_line).filter(|t| !t.is_empty()) {
            out.push_str(&format!(": {title}"));
        }
        out.push_str(" ──\n");
        if piece.text.trim().is_empty() {
            out.push_str(&format!("(no text in this {unit})\n"));
        } else {
            push_gutter_block(&mut out, piece.text);
        }
        out.push('\n');
    }
    out.truncate(out.trim_end().len());
    out.push('\n');
    out
}

/// The footer's notices: converted from what, how many units and their names, where the text stopped.
pub fn notices(conversion: &Conversion<'_>) -> Vec<String> {
    let mut notices = vec![format!("converted from {}", conversion.description)];
    if let Some(unit) = conversion.unit {
        let mut count = format!("{} {unit}(s)", conversion.unit_count);
        if !conversion.names.is_empty() {
            let listed: Vec<String> = (conversion.names.iter().take(MAX_NAMES_LISTED).enumerate())
                .map(|(index, name)| format!("{} {}", index + 1, one_line(name)))
                .collect();
            count.push_str(&format!(": {}", listed.join(", ")));
            let more = conversion.names.len().saturating_sub(MAX_NAMES_LISTED);
            if more > 0 {
                count.push_str(&format!(", … {more} more"));
            }
        }
        notices.push(format!("{count}; choose with pages=\"2\", pages=\"1-3\""));
    }
    if !conversion.complete {
        let limit = human_size(conversion.max_bytes);
        let last = conversion.units.last().map_or(1, |u| u.number);
        notices.push(match conversion.unit {
            Some(unit) => {
                format!(
                    "text stops in {unit} {last} at the conversion limit of {limit}; choose later {unit}s with pages="
                )
            }
            None => format!("text stops at the conversion limit of {limit}"),
        });
    }
    notices
}

/// A name on one line: runs of whitespace (line breaks included) as one space.
fn one_line(name: &str) -> String {
    name.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_stand_under_headers_with_their_text_behind_the_gutter() {
        let names = vec!["Sales".to_string(), "Costs\nQ3".to_string()];
        let conversion = Conversion {
            description: "Excel workbook (XLSX)",
            unit: Some("sheet"),
            units: vec![UnitView { number: 2, title: Some("Costs\nQ3"), text: "| a |\n── sheet 9 of 9 ──" }],
            unit_count: 2,
            names: &names,
            complete: false,
            max_bytes: 1024,
        };
        assert_eq!(render(&conversion), "── sheet 2 of 2: Costs Q3 ──\n│ | a |\n│ ── sheet 9 of 9 ──\n");
        assert_eq!(
            notices(&conversion),
            [
                "converted from Excel workbook (XLSX)",
                "2 sheet(s): 1 Sales, 2 Costs Q3; choose with pages=\"2\", pages=\"1-3\"",
                "text stops in sheet 2 at the conversion limit of 1.0 KiB; choose later sheets with pages="
            ]
        );
    }
}
