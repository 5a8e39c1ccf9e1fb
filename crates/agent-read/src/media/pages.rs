//! The `pages` field of a request: which pages of a PDF (or sheets, slides of a document) to extract. Parsed strictly (an error names the problem and shows the
//! valid forms) and kept as sorted, merged ranges, so pages come out in order, each once, and "7-" needs no page count.

/// Pages chosen by a request's `pages` field: sorted, merged 1-based inclusive ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSelection {
    /// Sorted, disjoint and non-adjacent ranges; an end of `None` runs to the last page.
    ranges: Vec<(u32, Option<u32>)>,
}

/// How a valid `pages` field looks, for error messages.
const VALID_FORMS: &str = r#"valid forms: "3", "1-5", "2,4-6", "7-" (page 7 to the end); pages are numbered from 1"#;

impl PageSelection {
    /// Parses "3", "1-5", "2,4-6" (spaces around commas/dashes allowed; "7-" means 7 to the end). Errors name the
    /// problem and show the valid forms.
    pub fn parse(spec: &str) -> Result<PageSelection, String> {
        let invalid = |problem: String| format!("pages {spec:?}: {problem}; {VALID_FORMS}");
        if spec.trim().is_empty() {
            return Err(invalid("no page given".to_string()));
        }
        let mut ranges = Vec::new();
        for item in spec.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(invalid("an empty item between commas".to_string()));
            }
            let range = match item.split_once('-') {
                None => {
                    let page = page_number(item).map_err(invalid)?;
                    (page, Some(page))
                }
                Some((first, last)) => {
                    let (first, last) = (first.trim(), last.trim());
                    if first.is_empty() {
                        return Err(invalid(format!("{item:?} has no first page")));
                    }
                    if last.contains('-') {
                        return Err(invalid(format!("{item:?} has more than one dash")));
                    }
                    let start = page_number(first).map_err(invalid)?;
                    if last.is_empty() {
                        (start, None)
                    } else {
                        let end = page_number(last).map_err(invalid)?;
                        if end < start {
                            return Err(invalid(format!("the range {item:?} runs backwards")));
                        }
                        (start, Some(end))
                    }
                }
            };
            ranges.push(range);
        }
        Ok(PageSelection { ranges: merge(ranges) })
    }

    /// Every page.
    pub fn all() -> PageSelection {
        PageSelection { ranges: vec![(1, None)] }
    }

    /// The chosen pages that exist in a document of `page_count` pages, in order.
    pub fn pages(&self, page_count: u32) -> impl Iterator<Item = u32> + '_ {
        self.ranges.iter().flat_map(move |&(start, end)| start..=end.unwrap_or(page_count).min(page_count))
    }

    /// Whether page `page` is chosen.
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Sheets read in one pass.
    pub fn contains(&self, page: u32) -> bool {
        self.ranges.iter().any(|&(start, end)| start <= page && end.is_none_or(|end| page <= end))
    }

    /// The last page chosen, or `None` when the selection runs to the end.
    #[cfg_attr(not(feature = "documents"), allow(dead_code))] // Sheets read in one pass.
    pub fn last(&self) -> Option<u32> {
        self.ranges.last().and_then(|&(_, end)| end)
    }

    /// The chosen page numbers past `page_count` (for an INVALID_RANGE error), if any.
    pub fn first_missing(&self, page_count: u32) -> Option<u32> {
        self.ranges.iter().find_map(|&(start, end)| match end {
            None => (start > page_count).then_some(start),
            Some(end) => (end > page_count).then_some(start.max(page_count.saturating_add(1))),
        })
    }

    /// The selection in the form [`PageSelection::parse`] reads back (how the worker receives it).
    #[cfg_attr(not(feature = "pdf"), allow(dead_code))] // The PDF worker's argument.
    pub(crate) fn spec(&self) -> String {
        let items: Vec<String> = self
            .ranges
            .iter()
            .map(|&(start, end)| match end {
                None => format!("{start}-"),
                Some(end) if end == start => start.to_string(),
                Some(end) => format!("{start}-{end}"),
            })
            .collect();
        items.join(",")
    }
}

/// One page number of a `pages` field: digits only, at least 1.
fn page_number(text: &str) -> Result<u32, String> {
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{text:?} is not a page number"));
    }
    match text.parse::<u32>() {
        Ok(0) => Err("there is no page 0".to_string()),
        Ok(page) => Ok(page),
        Err(_) => Err(format!("{text} is past the largest page number")),
    }
}

/// Sorts ranges and merges those that overlap or touch.
fn merge(mut ranges: Vec<(u32, Option<u32>)>) -> Vec<(u32, Option<u32>)> {
    ranges.sort_unstable_by_key(|&(start, _)| start);
    let mut merged: Vec<(u32, Option<u32>)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        if let Some(last) = merged.last_mut() {
            match last.1 {
                None => continue,
                Some(last_end) if start <= last_end.saturating_add(1) => {
                    last.1 = end.map(|end| end.max(last_end));
                    continue;
                }
                Some(_) => {}
            }
        }
        merged.push((start, end));
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_selection_reads_the_documented_forms() {
        let pages = |spec: &str, count| PageSelection::parse(spec).unwrap().pages(count).collect::<Vec<_>>();
        assert_eq!(pages("3", 10), [3]);
        assert_eq!(pages("1-5", 10), [1, 2, 3, 4, 5]);
        assert_eq!(pages("2,4-6", 10), [2, 4, 5, 6]);
        assert_eq!(pages(" 2 , 4 - 6 ", 10), [2, 4, 5, 6]);
        assert_eq!(pages("7-", 10), [7, 8, 9, 10]);
        assert_eq!(pages("7 -", 10), [7, 8, 9, 10]);
        assert_eq!(pages("5,1,3-4,2", 10), [1, 2, 3, 4, 5]);
        assert_eq!(pages("1-3,2-6,9", 10), [1, 2, 3, 4, 5, 6, 9]);
        assert_eq!(pages("4-,2", 6), [2, 4, 5, 6]);
        assert_eq!(PageSelection::parse("1-3,4,5-").unwrap(), PageSelection::all());
        assert_eq!(PageSelection::all().pages(3).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(PageSelection::parse("4294967295").unwrap().pages(u32::MAX).count(), 1);
    }

    #[test]
    fn page_selection_errors_name_the_problem_and_show_the_valid_forms() {
        for (spec, problem) in [
            ("0", "there is no page 0"),
            ("5-3", "runs backwards"),
            ("abc", r#""abc" is not a page number"#),
            ("", "no page given"),
            ("  ", "no page given"),
            ("1,,2", "empty item"),
            ("1,", "empty item"),
            ("-3", "has no first page"),
            ("1-2-3", "more than one dash"),
            ("0-4", "there is no page 0"),
            ("+3", "is not a page number"),
            ("1.5", "is not a page number"),
            ("99999999999", "past the largest page number"),
        ] {
            let err = PageSelection::parse(spec).expect_err(spec);
            assert!(err.contains(problem), "{spec:?}: {err}");
            assert!(err.contains(r#""2,4-6""#) && err.contains(r#""7-""#), "{spec:?}: {err}");
        }
    }

    #[test]
    fn page_selection_knows_the_missing_pages_and_round_trips() {
        let first_missing = |spec: &str, count| PageSelection::parse(spec).unwrap().first_missing(count);
        assert_eq!(first_missing("1-5", 5), None);
        assert_eq!(first_missing("4-9", 5), Some(6));
        assert_eq!(first_missing("2,8", 5), Some(8));
        assert_eq!(first_missing("3-", 5), None);
        assert_eq!(first_missing("7-", 5), Some(7));
        assert_eq!(PageSelection::parse("9").unwrap().pages(5).count(), 0);
        let chosen = PageSelection::parse("2,4-6").unwrap();
        assert!(chosen.contains(5) && !chosen.contains(3) && !chosen.contains(7));
        assert_eq!((chosen.last(), PageSelection::parse("2,7-").unwrap().last()), (Some(6), None));
        for spec in ["3", "1-5", "2,4-6", "7-", "1,3,5-9,12-"] {
            let selection = PageSelection::parse(spec).unwrap();
            assert_eq!(selection.spec(), spec);
            assert_eq!(PageSelection::parse(&selection.spec()).unwrap(), selection);
        }
    }
}
