use intervals::merge;

#[test]
fn keeps_disjoint_intervals() {
    assert_eq!(merge(vec![(5, 6), (1, 2)]), vec![(1, 2), (5, 6)]);
}

#[test]
fn merges_overlapping_intervals() {
    assert_eq!(merge(vec![(1, 4), (2, 6), (8, 9)]), vec![(1, 6), (8, 9)]);
}

#[test]
fn empty_input() {
    assert_eq!(merge(vec![]), vec![]);
}
