//! The files of the event log: `events-YYYY-MM-DD.json`, one JSON event per line, one file
//! per UTC day of the events' timestamps.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use muster_core::Event;

/// What a log file's name starts with.
const PREFIX: &str = "events-";
/// What a log file's name ends with.
const SUFFIX: &str = ".json";
/// The date format in file names.
const DATE_FORMAT: &str = "%Y-%m-%d";

/// The file holding the events of `date`.
pub(super) fn path_for(dir: &Path, date: NaiveDate) -> PathBuf {
    dir.join(format!("{PREFIX}{}{SUFFIX}", date.format(DATE_FORMAT)))
}

/// The date of a log file, from its name; `None` for other files.
pub(super) fn date_of(file_name: &str) -> Option<NaiveDate> {
    let date = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    NaiveDate::parse_from_str(date, DATE_FORMAT).ok()
}

/// Every log file of `dir` with its date, oldest first; none when `dir` is missing.
pub(super) fn log_files(dir: &Path) -> io::Result<Vec<(NaiveDate, PathBuf)>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some(date) = entry.file_name().to_str().and_then(date_of) {
            files.push((date, entry.path()));
        }
    }
    files.sort();
    Ok(files)
}

/// The events of one log file, in the order written; lines that are not events are skipped.
pub(super) fn read_events(path: &Path) -> io::Result<Vec<Event>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(event) => Some(event),
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "skipping a line of the event log");
                None
            }
        })
        .collect())
}

/// Removes the log files of days before `oldest_kept`; returns how many went.
pub(super) fn remove_before(dir: &Path, oldest_kept: NaiveDate) -> io::Result<usize> {
    let mut removed = 0;
    for (date, path) in log_files(dir)? {
        if date < oldest_kept {
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_dates() {
        let date = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let path = path_for(Path::new("/e"), date);
        assert_eq!(path, Path::new("/e/events-2026-03-09.json"));
        assert_eq!(date_of("events-2026-03-09.json"), Some(date));
        for other in [
            "events.log",
            "events-2026-13-01.json",
            "events-2026-03-09.json.tmp",
        ] {
            assert_eq!(date_of(other), None, "{other}");
        }
    }
}
