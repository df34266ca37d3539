//! The offset commit and fetch validation matrix.

use kafka_protocol::error::ResponseError;

use super::harness::*;

fn code(result: Result<(), crate::group::consumer::GroupError>) -> i16 {
    result.map_or_else(|e| e.error.code(), |()| 0)
}

#[test]
fn offset_commit_matrix() {
    let mut c = coordinator();
    assert_eq!(
        code(c.validate_offset_commit(GROUP, "a", 1, false, 9, [], 0)),
        ResponseError::GroupIdNotFound.code()
    );
    send(&mut c, &join("a", &["foo"]), 0);
    send(&mut c, &heartbeat("a", -1, &parts(&[])), 0);
    // Empty group: admin-style commits with epoch -1 pass.
    assert_eq!(
        code(c.validate_offset_commit(GROUP, "", -1, false, 9, [], 1)),
        0
    );

    send(&mut c, &join("a", &["foo"]), 2);
    let epoch = c.group(GROUP).unwrap().members["a"].member_epoch;
    let cases = [
        ("a", epoch, false, 9, 0),
        ("a", epoch, true, 8, 0),
        (
            "a",
            epoch - 1,
            false,
            9,
            ResponseError::StaleMemberEpoch.code(),
        ),
        (
            "a",
            epoch + 1,
            false,
            9,
            ResponseError::StaleMemberEpoch.code(),
        ),
        (
            "a",
            epoch,
            false,
            8,
            ResponseError::UnsupportedVersion.code(),
        ),
        ("zz", epoch, false, 9, ResponseError::UnknownMemberId.code()),
        ("", -1, false, 9, ResponseError::UnknownMemberId.code()),
    ];
    for (member, member_epoch, transactional, version, expected) in cases {
        assert_eq!(
            code(c.validate_offset_commit(
                GROUP,
                member,
                member_epoch,
                transactional,
                version,
                [],
                3
            )),
            expected,
            "{member} {member_epoch} {transactional} v{version}"
        );
    }
}

#[test]
fn offset_fetch_matrix() {
    let mut c = coordinator();
    send(&mut c, &join("a", &["foo"]), 0);
    assert_eq!(code(c.validate_offset_fetch(GROUP, None, -1, 1)), 0);
    assert_eq!(code(c.validate_offset_fetch(GROUP, Some("a"), 1, 1)), 0);
    assert_eq!(
        code(c.validate_offset_fetch(GROUP, Some("a"), 0, 1)),
        ResponseError::StaleMemberEpoch.code()
    );
    assert_eq!(
        code(c.validate_offset_fetch(GROUP, Some("zz"), 1, 1)),
        ResponseError::UnknownMemberId.code()
    );
    // After the session expires the member is gone.
    assert_eq!(
        code(c.validate_offset_fetch(GROUP, Some("a"), 1, 45_000)),
        ResponseError::UnknownMemberId.code()
    );
}
