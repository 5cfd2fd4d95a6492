//! The files of the event log: one JSON event per line, `events-YYYY-MM-DD.json` for the
//! current file of a UTC day, `events-YYYY-MM-DD.<n>.json` for the files rotated out of it
//! (`n` counting up from 1, so a higher `n` holds newer events).

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use muster_core::Event;

/// What a log file's name starts with.
const PREFIX: &str = "events-";
/// What a log file's name ends with.
const SUFFIX: &str = ".json";
/// The date format in file names.
const DATE_FORMAT: &str = "%Y-%m-%d";
/// The sequence number that sorts a day's current file after its rotated ones.
const CURRENT: u32 = u32::MAX;
/// How many bytes the backwards reader reads at a time.
const CHUNK: usize = 64 * 1024;
/// Lines longer than this are not events muster writes; the reader skips them.
pub(super) const MAX_LINE_BYTES: usize = 1024 * 1024;

/// One file of the log.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct LogFile {
    /// The UTC day of its events.
    pub(super) date: NaiveDate,
    /// Its place among the day's files (the current one last).
    pub(super) seq: u32,
    /// Where it is.
    pub(super) path: PathBuf,
}

impl LogFile {
    /// Whether it is its day's current file (not rotated).
    pub(super) fn is_current(&self) -> bool {
        self.seq == CURRENT
    }
}

/// The current file holding the events of `date`.
pub(super) fn path_for(dir: &Path, date: NaiveDate) -> PathBuf {
    dir.join(format!("{PREFIX}{}{SUFFIX}", date.format(DATE_FORMAT)))
}

/// The name the `seq`-th file rotated out of `date`'s current file gets.
pub(super) fn rotated_path(dir: &Path, date: NaiveDate, seq: u32) -> PathBuf {
    dir.join(format!(
        "{PREFIX}{}.{seq}{SUFFIX}",
        date.format(DATE_FORMAT)
    ))
}

/// The date and sequence number of a log file, from its name; `None` for other files.
pub(super) fn parse_name(file_name: &str) -> Option<(NaiveDate, u32)> {
    let stem = file_name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (date, seq) = match stem.split_once('.') {
        Some((date, seq)) if !seq.is_empty() && seq.bytes().all(|b| b.is_ascii_digit()) => {
            (date, seq.parse::<u32>().ok().filter(|n| *n != CURRENT)?)
        }
        Some(_) => return None,
        None => (stem, CURRENT),
    };
    Some((NaiveDate::parse_from_str(date, DATE_FORMAT).ok()?, seq))
}

/// Every log file of `dir`, oldest first; none when `dir` is missing.
pub(super) fn log_files(dir: &Path) -> io::Result<Vec<LogFile>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry?;
        if let Some((date, seq)) = entry.file_name().to_str().and_then(parse_name) {
            files.push(LogFile {
                date,
                seq,
                path: entry.path(),
            });
        }
    }
    files.sort();
    Ok(files)
}

/// Calls `f` with the events of one log file, newest first, until it returns `false`; lines
/// that are not events (or longer than [`MAX_LINE_BYTES`]) are skipped. Reads the file from
/// its end, a chunk at a time, so the newest events cost only what they take.
pub(super) fn for_each_event_rev(path: &Path, mut f: impl FnMut(Event) -> bool) -> io::Result<()> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut pos = file.seek(SeekFrom::End(0))?;
    // The bytes after the last line break seen, in file order (a line being assembled).
    let mut tail: Vec<u8> = Vec::new();
    let mut overlong = false;
    let mut chunk = vec![0u8; CHUNK];
    while pos > 0 {
        let n = usize::try_from(pos.min(CHUNK as u64)).unwrap_or(CHUNK);
        pos -= n as u64;
        file.seek(SeekFrom::Start(pos))?;
        file.read_exact(&mut chunk[..n])?;
        let mut end = n;
        while let Some(i) = chunk[..end].iter().rposition(|b| *b == b'\n') {
            let piece = &chunk[i + 1..end];
            if !overlong && piece.len() + tail.len() <= MAX_LINE_BYTES {
                let mut line = Vec::with_capacity(piece.len() + tail.len());
                line.extend_from_slice(piece);
                line.extend_from_slice(&tail);
                if !emit(path, &line, &mut f) {
                    return Ok(());
                }
            }
            tail.clear();
            overlong = false;
            end = i;
        }
        if !overlong {
            if tail.len() + end > MAX_LINE_BYTES {
                overlong = true;
                tail.clear();
            } else {
                let mut joined = Vec::with_capacity(end + tail.len());
                joined.extend_from_slice(&chunk[..end]);
                joined.extend_from_slice(&tail);
                tail = joined;
            }
        }
    }
    if !overlong {
        emit(path, &tail, &mut f);
    }
    Ok(())
}

/// Parses one line and hands it to `f`; returns whether to go on.
fn emit(path: &Path, line: &[u8], f: &mut impl FnMut(Event) -> bool) -> bool {
    if line.iter().all(u8::is_ascii_whitespace) {
        return true;
    }
    match serde_json::from_slice(line) {
        Ok(event) => f(event),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "skipping a line of the event log");
            true
        }
    }
}

/// Removes the log files of days before `oldest_kept`; returns how many went.
pub(super) fn remove_before(dir: &Path, oldest_kept: NaiveDate) -> io::Result<usize> {
    let expired: Vec<_> = log_files(dir)?
        .into_iter()
        .filter(|f| f.date < oldest_kept)
        .collect();
    remove_all(&expired)
}

/// Removes the oldest files until at most `max_files` remain (never the current file of
/// `keep`); returns how many went.
pub(super) fn remove_oldest_beyond(dir: &Path, max_files: usize, keep: &Path) -> io::Result<usize> {
    let files = log_files(dir)?;
    let excess = files.len().saturating_sub(max_files);
    let doomed: Vec<_> = files
        .into_iter()
        .filter(|f| f.path != keep)
        .take(excess)
        .collect();
    remove_all(&doomed)
}

fn remove_all(files: &[LogFile]) -> io::Result<usize> {
    let mut removed = 0;
    for file in files {
        match fs::remove_file(&file.path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn names_and_dates() {
        let date = NaiveDate::from_ymd_opt(2026, 3, 9).unwrap();
        let path = path_for(Path::new("/e"), date);
        assert_eq!(path, Path::new("/e/events-2026-03-09.json"));
        assert_eq!(parse_name("events-2026-03-09.json"), Some((date, CURRENT)));
        assert_eq!(
            rotated_path(Path::new("/e"), date, 3),
            Path::new("/e/events-2026-03-09.3.json")
        );
        assert_eq!(parse_name("events-2026-03-09.3.json"), Some((date, 3)));
        for other in [
            "events.log",
            "events-2026-13-01.json",
            "events-2026-03-09.json.tmp",
            "events-2026-03-09..json",
            "events-2026-03-09.x.json",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn reads_backwards_across_chunks_and_skips_overlong_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events-2026-03-09.json");
        let mut file = File::create(&path).unwrap();
        let line = |i: usize, pad: usize| {
            let mut e = Event::new(
                "Workflow",
                &format!("w{i}"),
                "default",
                "R",
                muster_core::EventType::Normal,
                "m".repeat(pad),
            );
            e.timestamp = chrono::Utc::now();
            serde_json::to_string(&e).unwrap()
        };
        for i in 0..300 {
            writeln!(file, "{}", line(i, i * 37 % 900)).unwrap();
        }
        writeln!(file, "{}", line(300, MAX_LINE_BYTES + 10)).unwrap();
        writeln!(file, "not json").unwrap();
        write!(file, "{}", line(301, 5)).unwrap();
        drop(file);
        let mut seen = Vec::new();
        for_each_event_rev(&path, |e| {
            seen.push(e.involved_object.name);
            true
        })
        .unwrap();
        let expected: Vec<String> = std::iter::once(301)
            .chain((0..300).rev())
            .map(|i| format!("w{i}"))
            .collect();
        assert_eq!(seen, expected);
        // Stopping early reads no further.
        let mut first = Vec::new();
        for_each_event_rev(&path, |e| {
            first.push(e.involved_object.name);
            first.len() < 2
        })
        .unwrap();
        assert_eq!(first, ["w301", "w299"]);
    }
}
