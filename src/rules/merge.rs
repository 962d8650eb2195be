//! The three-way merge of one file, as `land` merges a task's base into a lane: line based like git's.
//! A change on one side only wins; changes on both sides to different regions merge; changes that
//! overlap conflict, reported with their regions. A file missing on a side is deleted there (a rename is a
//! delete plus an add); files that are not text (a NUL byte or not UTF-8) merge only when equal. The line
//! merge itself is `diffy`'s (diff3 style); this rule decides the whole-file cases and reads its regions.

use serde::Serialize;

/// How much text of each side a reported region carries.
pub const REGION_TEXT_CHARS: usize = 2_000;
/// How many regions of one file a conflict reports.
pub const MAX_REGIONS: usize = 20;

/// What merging one file came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// The file as both sides now agree it is; `None` when it is deleted.
    Clean(Option<Vec<u8>>),
    Conflict(Conflict),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// `content` (overlapping edits), `binary` (non-text files that differ), `deleted_in_lane` or
    /// `deleted_in_base` (one side deleted what the other changed), `added_in_both` (both added the file
    /// with different text, and those texts conflict).
    pub kind: &'static str,
    /// The conflicting regions (content conflicts; at most [`MAX_REGIONS`]).
    pub regions: Vec<Region>,
    /// How many regions there were in all.
    pub region_count: usize,
}

/// One conflicting region: the lines each side has there, and what the merge base had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Region {
    pub lane: Lines,
    pub base: Lines,
    /// The merge base's text of the region (empty when both sides added it).
    pub merge_base: String,
}

/// Lines `from..=to` (1-based) of one side's file and their text (cut at [`REGION_TEXT_CHARS`]);
/// `from` is the line the region starts at and `to` is `from - 1` when that side has no lines there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lines {
    pub from: usize,
    pub to: usize,
    pub text: String,
    /// The text was cut.
    pub cut: bool,
}

/// Whether bytes are a text the line merge may read: UTF-8 without NUL bytes (git's own test for binary).
pub fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0) && std::str::from_utf8(bytes).is_ok()
}

/// Merges `lane` and `base` given their merge base; each is `None` where the file does not exist.
pub fn merge3(merge_base: Option<&[u8]>, lane: Option<&[u8]>, base: Option<&[u8]>) -> Merged {
    if lane == base || merge_base == base {
        return Merged::Clean(lane.map(<[u8]>::to_vec));
    }
    if merge_base == lane {
        return Merged::Clean(base.map(<[u8]>::to_vec));
    }
    let whole = |kind| Merged::Conflict(Conflict { kind, regions: vec![], region_count: 0 });
    let (Some(lane), Some(base)) = (lane, base) else {
        return whole(if lane.is_none() { "deleted_in_lane" } else { "deleted_in_base" });
    };
    let ancestor = merge_base.unwrap_or_default();
    let texts = (std::str::from_utf8(ancestor), std::str::from_utf8(lane), std::str::from_utf8(base));
    let (Ok(a), Ok(l), Ok(b)) = texts else { return whole("binary") };
    if ![ancestor, lane, base].iter().all(|t| is_text(t)) {
        return whole("binary");
    }
    let marker = marker_len([a, l, b]);
    let mut options = diffy::MergeOptions::new();
    options
        .set_conflict_style(diffy::ConflictStyle::Diff3)
        .set_conflict_marker_length(marker)
        .set_incomplete_hunk_style(diffy::IncompleteHunkStyle::Git);
    match options.merge(a, l, b) {
        Ok(text) => Merged::Clean(Some(text.into_bytes())),
        Err(marked) => {
            let regions = regions(&marked, marker, l, b);
            let kind = if merge_base.is_none() { "added_in_both" } else { "content" };
            let region_count = regions.len();
            Merged::Conflict(Conflict { kind, regions: regions.into_iter().take(MAX_REGIONS).collect(), region_count })
        }
    }
}

/// Conflict markers longer than any run of marker characters a line of the inputs starts with, so the
/// marked output reads back without ambiguity.
fn marker_len(texts: [&str; 3]) -> usize {
    let longest = texts
        .iter()
        .flat_map(|t| t.lines())
        .map(|line| {
            let first = line.chars().next().unwrap_or(' ');
            if "<|=>".contains(first) {
                line.chars().take_while(|&c| c == first).count()
            } else {
                0
            }
        })
        .max()
        .unwrap_or(0);
    longest.max(6) + 1
}

/// Reads the regions back out of diffy's diff3-marked output and places each side's lines in that side's
/// file, searching forward from the previous region.
fn regions(marked: &str, marker: usize, lane: &str, base: &str) -> Vec<Region> {
    let is = |line: &str, c: char| line.len() >= marker && line.chars().take(marker).all(|x| x == c);
    let exact = |line: &str, c: char| is(line, c) && line[marker..].trim_end_matches('\n').chars().all(|x| x != c);
    let (lane_lines, base_lines): (Vec<&str>, Vec<&str>) =
        (lane.split_inclusive('\n').collect(), base.split_inclusive('\n').collect());
    let (mut lane_at, mut base_at) = (0, 0);
    let mut out = Vec::new();
    let mut section: Option<usize> = None;
    let mut parts: [Vec<&str>; 3] = Default::default();
    // The merged line just before a region: where it sits in each side places a region with no lines.
    let mut before: Option<&str> = None;
    for line in marked.split_inclusive('\n') {
        match section {
            None if exact(line, '<') => section = Some(0),
            None => before = Some(line),
            Some(0) if exact(line, '|') => section = Some(1),
            Some(0 | 1) if exact(line, '=') => section = Some(2),
            Some(2) if exact(line, '>') => {
                let [l, o, b] = std::mem::take(&mut parts);
                let lane_side = place(&lane_lines, before, &l, &mut lane_at);
                let base_side = place(&base_lines, before, &b, &mut base_at);
                out.push(Region { lane: lane_side, base: base_side, merge_base: cut(&o.concat()).0 });
                section = None;
            }
            Some(i) => parts[i].push(line),
        }
    }
    out
}

/// Finds `part` in `file` at or after `*at` (right after the line `before`, where that places it) and
/// moves `*at` past it.
fn place(file: &[&str], before: Option<&str>, part: &[&str], at: &mut usize) -> Lines {
    fn norm(s: &str) -> &str {
        s.trim_end_matches('\n')
    }
    let matches = |i: usize, lines: &[&str]| {
        lines.iter().enumerate().all(|(k, p)| file.get(i + k).is_some_and(|f| norm(f) == norm(p)))
    };
    let after_context = match before {
        None if *at == 0 && matches(0, part) => Some(0),
        None => None,
        Some(b) => (*at..file.len()).find(|&i| norm(file[i]) == norm(b) && matches(i + 1, part)).map(|i| i + 1),
    };
    let found = after_context.or_else(|| (*at..=file.len().saturating_sub(part.len())).find(|&i| matches(i, part)));
    // The file's own lines where found: the marked output ends a last line without a newline with one.
    let text = match found {
        Some(i) => file[i..i + part.len()].concat(),
        None => part.concat(),
    };
    let found = found.unwrap_or(*at);
    *at = found + part.len();
    let (text, was_cut) = cut(&text);
    Lines { from: found + 1, to: found + part.len(), text, cut: was_cut }
}

fn cut(text: &str) -> (String, bool) {
    match text.char_indices().nth(REGION_TEXT_CHARS) {
        Some((i, _)) => (text[..i].to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(m: Merged) -> String {
        match m {
            Merged::Clean(Some(b)) => String::from_utf8(b).unwrap(),
            other => panic!("not a clean merge: {other:?}"),
        }
    }

    #[test]
    fn a_change_on_one_side_wins_and_disjoint_changes_merge() {
        let o = "a\nb\nc\nd\ne\n";
        assert_eq!(
            clean(merge3(Some(o.as_bytes()), Some(&b"a\nB\nc\nd\ne\n"[..]), Some(o.as_bytes()))),
            "a\nB\nc\nd\ne\n"
        );
        assert_eq!(
            clean(merge3(Some(o.as_bytes()), Some(o.as_bytes()), Some(&b"a\nb\nc\nD\ne\n"[..]))),
            "a\nb\nc\nD\ne\n"
        );
        let both = merge3(Some(o.as_bytes()), Some(&b"A\nb\nc\nd\ne\n"[..]), Some(&b"a\nb\nc\nd\nE\n"[..]));
        assert_eq!(clean(both), "A\nb\nc\nd\nE\n");
    }

    #[test]
    fn overlapping_changes_conflict_with_their_regions() {
        let o = "one\ntwo\nthree\nfour\n";
        let Merged::Conflict(c) = merge3(
            Some(o.as_bytes()),
            Some(&b"one\nTWO lane\nthree\nfour\n"[..]),
            Some(&b"one\ntwo base\nthree\nfour\n"[..]),
        ) else {
            panic!("expected a conflict")
        };
        assert_eq!(c.kind, "content");
        assert_eq!(c.region_count, 1);
        let r = &c.regions[0];
        assert_eq!((r.lane.from, r.lane.to, r.lane.text.as_str()), (2, 2, "TWO lane\n"));
        assert_eq!((r.base.from, r.base.to, r.base.text.as_str()), (2, 2, "two base\n"));
        assert_eq!(r.merge_base, "two\n");
    }

    #[test]
    fn deletes_win_unless_the_other_side_changed_the_file() {
        let o: &[u8] = b"x\n";
        assert_eq!(merge3(Some(o), None, Some(o)), Merged::Clean(None));
        assert_eq!(merge3(Some(o), Some(o), None), Merged::Clean(None));
        assert_eq!(merge3(Some(o), None, None), Merged::Clean(None));
        let Merged::Conflict(c) = merge3(Some(o), None, Some(&b"y\n"[..])) else { panic!() };
        assert_eq!(c.kind, "deleted_in_lane");
        let Merged::Conflict(c) = merge3(Some(o), Some(&b"y\n"[..]), None) else { panic!() };
        assert_eq!(c.kind, "deleted_in_base");
    }

    #[test]
    fn a_rename_is_a_delete_plus_an_add() {
        // The lane renamed old.txt to new.txt; the base edited another file: both halves are one-sided.
        assert_eq!(merge3(Some(&b"t\n"[..]), None, Some(&b"t\n"[..])), Merged::Clean(None));
        assert_eq!(merge3(None, Some(&b"t\n"[..]), None), Merged::Clean(Some(b"t\n".to_vec())));
    }

    #[test]
    fn files_added_on_both_sides_merge_when_equal_and_conflict_when_not() {
        assert_eq!(merge3(None, Some(&b"same\n"[..]), Some(&b"same\n"[..])), Merged::Clean(Some(b"same\n".to_vec())));
        let Merged::Conflict(c) = merge3(None, Some(&b"mine\n"[..]), Some(&b"theirs\n"[..])) else { panic!() };
        assert_eq!(c.kind, "added_in_both");
        assert_eq!(c.regions[0].lane.text, "mine\n");
        assert_eq!(c.regions[0].base.text, "theirs\n");
        let Merged::Conflict(c) = merge3(None, Some(&b"mine"[..]), Some(&b"theirs"[..])) else { panic!() };
        assert_eq!(
            (c.regions[0].lane.text.as_str(), c.regions[0].base.text.as_str()),
            ("mine", "theirs"),
            "no newline added"
        );
    }

    #[test]
    fn binary_files_are_equal_or_in_conflict() {
        let (a, b): (&[u8], &[u8]) = (b"\x00\x01bin", b"\x00\x02bin");
        assert_eq!(merge3(Some(a), Some(b), Some(b)), Merged::Clean(Some(b.to_vec())));
        assert_eq!(merge3(Some(a), Some(a), Some(b)), Merged::Clean(Some(b.to_vec())));
        let Merged::Conflict(c) = merge3(Some(a), Some(b), Some(&b"\x00\x03"[..])) else { panic!() };
        assert_eq!(c.kind, "binary");
        let Merged::Conflict(c) = merge3(Some(&b"x\n"[..]), Some(&b"\xff\xfe"[..]), Some(&b"y\n"[..])) else {
            panic!()
        };
        assert_eq!(c.kind, "binary", "not UTF-8 is not text");
    }

    #[test]
    fn text_that_looks_like_markers_reads_back_unchanged() {
        let o = "<<<<<<< ours\nx\n=======\n";
        let l = "<<<<<<< ours\nlane\n=======\n";
        let b = "<<<<<<< ours\nbase\n=======\n";
        let Merged::Conflict(c) = merge3(Some(o.as_bytes()), Some(l.as_bytes()), Some(b.as_bytes())) else { panic!() };
        assert_eq!(c.regions.len(), 1);
        assert_eq!((c.regions[0].lane.from, c.regions[0].lane.text.as_str()), (2, "lane\n"));
    }

    #[test]
    fn a_deletion_on_one_side_against_an_edit_is_a_region_with_no_lines() {
        let o = "a\nb\nc\n";
        let Merged::Conflict(c) = merge3(Some(o.as_bytes()), Some(&b"a\nc\n"[..]), Some(&b"a\nB\nc\n"[..])) else {
            panic!()
        };
        let r = &c.regions[0];
        assert_eq!((r.lane.from, r.lane.to, r.lane.text.as_str()), (2, 1, ""));
        assert_eq!((r.base.from, r.base.to), (2, 2));
    }
}
