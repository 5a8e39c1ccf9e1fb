use super::*;

/// The batches `content` (given in `parts`, as separate streams) is cut into.
fn batches(parts: &[&[u8]]) -> (Vec<String>, usize) {
    let mut batcher = Batcher::new();
    let mut out = Vec::new();
    let mut sink = |batch: Vec<u8>| {
        out.push(String::from_utf8_lossy(&batch).into_owned());
        ControlFlow::Continue(())
    };
    for part in parts {
        let _ = batcher.feed(part, &mut sink);
    }
    let _ = batcher.finish(&mut sink);
    (out, batcher.skipped())
}

#[test]
fn small_content_is_one_batch_of_whole_operations_without_inline_images() {
    let content = b"q 1 0 0 1 5 5 cm BT /F1 12 Tf (a) Tj ET BI /W 1 /H 1 ID \xff\x00 EI Q";
    let (out, skipped) = batches(&[content]);
    assert_eq!(out, ["q\n1 0 0 1 5 5 cm\nBT\n/F1 12 Tf\n(a) Tj\nET\nQ\n"]);
    assert_eq!(skipped, 0);
}

#[test]
fn an_operation_may_run_from_one_stream_into_the_next() {
    let (out, _) = batches(&[b"BT /F1", b"12 Tf (x) Tj ET"]);
    assert_eq!(out, ["BT\n/F1\n12 Tf\n(x) Tj\nET\n"]);
}

#[test]
fn many_operators_are_cut_at_clean_points_and_each_batch_restores_the_state() {
    let mut content = b"q 2 0 0 2 10 20 cm q 1 0 0 1 5 0 cm /F1 9 Tf 3 Tc 11 TL BT 1 0 0 1 50 700 Tm\n".to_vec();
    for _ in 0..SOFT_TOKENS {
        content.extend_from_slice(b"(w) Tj T* ");
    }
    content.extend_from_slice(b"ET Q Q");
    let (out, _) = batches(&[&content]);
    assert!(out.len() >= 2, "{} batches", out.len());
    // Every batch ends right after T* (a clean point), and the next restores the saved state, the current one, and
    // the text object at the line where the cut fell.
    assert!(out[0].ends_with("T*\n"), "{}", &out[0][out[0].len() - 20..]);
    let prologue: Vec<&str> = out[1].lines().take(9).collect();
    let y = 700 - 11 * out[0].matches("T*").count() as i64;
    let tm = format!("1 0 0 1 50 {y} Tm");
    let expected = ["q", "2 0 0 2 10 20 cm", "q", "1 0 0 1 5 0 cm", "/F1 9 Tf", "3 Tc", "11 TL", "BT", tm.as_str()];
    assert_eq!(prologue, expected, "{}", &out[1][..200]);
    // Every operation of the content is passed on once.
    let shown: usize = out.iter().map(|batch| batch.matches("(w) Tj").count()).sum();
    assert_eq!(shown, SOFT_TOKENS);
}

#[test]
fn a_batch_is_cut_at_the_hard_limit_inside_a_line_too() {
    let mut content = b"BT /F1 12 Tf 72 700 Td ".to_vec();
    for _ in 0..HARD_TOKENS {
        content.extend_from_slice(b"(w) Tj ");
    }
    content.extend_from_slice(b"ET");
    let (out, _) = batches(&[&content]);
    assert!(out.len() >= 2);
    assert!(out.iter().all(|batch| batch.split_ascii_whitespace().count() <= HARD_TOKENS + 64));
    assert!(out[1].starts_with("/F1 12 Tf\nBT\n1 0 0 1 72 700 Tm\n(w) Tj"), "{}", &out[1][..80]);
}

#[test]
fn oversized_operations_are_skipped_and_counted() {
    let mut huge_array = b"BT [".to_vec();
    for _ in 0..MAX_OPERATION_TOKENS {
        huge_array.extend_from_slice(b"(x) 1 ");
    }
    huge_array.extend_from_slice(b"] TJ (after) Tj ET");
    let (out, skipped) = batches(&[&huge_array]);
    assert_eq!(skipped, 1);
    assert_eq!(out, ["BT\n(after) Tj\nET\n"]);
    let mut long_string = b"BT (".to_vec();
    long_string.resize(long_string.len() + MAX_OPERATION_BYTES, b'y');
    long_string.extend_from_slice(b") Tj ET");
    // The string in one stream, its operator in the next: what is carried over is bounded too.
    let (out, skipped) = batches(&[&long_string[..long_string.len() - 6], &long_string[long_string.len() - 6..]]);
    assert_eq!((out, skipped), (vec!["BT\nET\n".to_string()], 1));
}

#[test]
fn saved_states_nest_only_so_deep() {
    let content =
        format!("{} BT (deep) Tj ET {}", "q ".repeat(MAX_SAVED_STATES + 10), "Q ".repeat(MAX_SAVED_STATES + 10));
    let (out, _) = batches(&[content.as_bytes()]);
    assert_eq!(out[0].matches("q\n").count(), MAX_SAVED_STATES);
    assert_eq!(out[0].matches("Q\n").count(), MAX_SAVED_STATES);
}

#[test]
fn matrices_compose_and_invert_as_pdf_does() {
    let scale = [2.0, 0.0, 0.0, 2.0, 10.0, 20.0];
    let shift = translation(5.0, 0.0);
    // A point at the origin: shifted to (5, 0), then scaled and moved to (20, 20).
    assert_eq!(then(&shift, &scale), [2.0, 0.0, 0.0, 2.0, 20.0, 20.0]);
    let inverse = inverse(&scale).unwrap();
    assert_eq!(then(&scale, &inverse), IDENTITY);
    assert_eq!(super::inverse(&[0.0; 6]), None);
    assert_eq!(number(1.5).as_deref(), Some("1.500000"));
    assert_eq!(number(-3.0).as_deref(), Some("-3"));
    assert_eq!(number(f64::INFINITY), None);
}
