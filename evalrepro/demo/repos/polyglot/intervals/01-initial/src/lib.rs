//! Closed integer intervals, merged where they overlap.

/// Merges the intervals `(start, end)` (each with `start <= end`) that overlap or
/// touch, and returns them sorted by start.
pub fn merge(mut intervals: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    intervals.sort();
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for (start, end) in intervals {
        match merged.last_mut() {
            Some(last) if start < last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}
