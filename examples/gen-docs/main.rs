//! Regenerates the checked-in shell completions (`completions/`) and man page
//! (`man/retry.1`) from the clap definition: `cargo run --example gen-docs`.
//!
//! A test (`ship::generated_files_are_fresh`) fails when the checked-in files
//! differ from what this would write. A change to the CLI also changes the
//! `-h`/`--help` snapshots in `tests/it/snapshots/`; those are reviewed, not
//! regenerated blindly: `cargo insta review`, or
//! `INSTA_UPDATE=always cargo test --test it ship::` and read the diff.

mod render;

use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (path, bytes) in render::files() {
        let path = root.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, bytes)?;
        println!("wrote {}", path.display());
    }
    println!(
        "regenerate after changing the CLI with: {}",
        render::REGENERATE
    );
    Ok(())
}
