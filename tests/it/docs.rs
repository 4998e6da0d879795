//! The README and the guide in docs/ tell the truth: every transcript
//! (`$ retry ...` followed by its output) is what the binary prints, and
//! every link between the pages reaches a file and a heading that exist.

use std::path::{Path, PathBuf};

use crate::util::retry;

/// README.md and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    let mut guide: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    guide.sort();
    pages.extend(guide);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of a page outside fenced code blocks, and the blocks' lines.
fn split_fences(text: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
    let (mut prose, mut blocks) = (Vec::new(), Vec::new());
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        match (&mut block, line.trim_start().starts_with("```")) {
            (None, true) => block = Some(Vec::new()),
            (Some(_), true) => blocks.push(block.take().expect("open block")),
            (Some(b), false) => b.push(line),
            (None, false) => prose.push(line),
        }
    }
    (prose, blocks)
}

/// A transcript line shown ending in "…" stands for any line it begins.
fn shown_matches(shown: &str, actual: &str) -> bool {
    match shown.strip_suffix('…') {
        Some(prefix) => actual.starts_with(prefix),
        None => actual == shown,
    }
}

#[test]
fn transcripts_show_what_retry_prints() {
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for block in split_fences(&text).1 {
            let mut lines = block.iter().peekable();
            while let Some(line) = lines.next() {
                let Some(command) = line.strip_prefix("$ retry ") else {
                    continue;
                };
                let mut shown = Vec::new();
                while let Some(next) = lines.next_if(|l| !l.starts_with("$ ")) {
                    shown.push(next.trim_end());
                }
                let args = shlex::split(command).expect("a transcript's command parses");
                let out = retry(&args).env("COLUMNS", "80").run();
                let stdout = out.stdout_text();
                let mut actual = stdout.lines().map(str::trim_end);
                // The lines shown appear in this order; a transcript may
                // leave lines out ("lines abridged"), never change one.
                for want in &shown {
                    assert!(
                        actual.any(|got| shown_matches(want, got)),
                        "{}: `retry {command}` does not print {want:?} where shown; it printed:\n{stdout}",
                        page.display()
                    );
                }
                checked += 1;
            }
        }
    }
    // The dry run, the comparison, the two paced runs and the environment.
    assert!(checked >= 5, "only {checked} transcripts found");
}

/// A heading's anchor as GitHub makes it: lower case, punctuation dropped,
/// spaces turned into hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    split_fences(text)
        .0
        .iter()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#')))
        .collect()
}

/// The targets of the page's inline links `[text](target)`, outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in split_fences(text).0 {
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

#[test]
fn links_between_pages_reach_their_headings() {
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for link in links(&text) {
            if link.contains("://") {
                continue;
            }
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a directory").join(file)
            };
            assert!(
                target.exists(),
                "{}: link to {link}: no such file",
                page.display()
            );
            if !fragment.is_empty() {
                assert!(
                    anchors(&read(&target)).iter().any(|a| a == fragment),
                    "{}: link to {link}: no such heading",
                    page.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links found");
}

#[test]
fn anchors_follow_github() {
    assert_eq!(
        anchor(" Spreading the first attempt: --stagger"),
        "spreading-the-first-attempt---stagger"
    );
    assert_eq!(
        anchor("Pacing the group's retries: --pace"),
        "pacing-the-groups-retries---pace"
    );
}
