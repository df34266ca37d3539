//! Regressions: failing seeds saved as data (`saved/*.regression`) and replayed by the test
//! suite (`cargo stest -p regressions`). The file format lives in `scenarios::regression`, so
//! `cargo sim replay` reads the same files.

pub use scenarios::regression::{Expectation, ParseError, Regression};

/// Every saved regression file: (file name, text), sorted by name.
pub fn saved() -> std::io::Result<Vec<(String, String)>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("saved");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "regression") {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((name, std::fs::read_to_string(&path)?));
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_saved_file_parses() {
        let files = saved().unwrap();
        assert!(!files.is_empty(), "no saved regressions");
        for (name, text) in files {
            Regression::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn the_cli_reads_the_same_directory() {
        let ours = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("saved");
        assert_eq!(
            std::fs::canonicalize(scenarios::regression::saved_dir()).unwrap(),
            std::fs::canonicalize(ours).unwrap()
        );
    }
}
