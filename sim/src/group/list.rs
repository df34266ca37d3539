//! ListGroups filtering, as Kafka's `GroupMetadataManager.listGroups` does it: `StatesFilter`
//! (v4+) matches the state case-insensitively after trimming; `TypesFilter` (v5+) names group
//! types case-insensitively (`Group.GroupType.parse`: an unrecognised name parses to
//! `unknown`, which no group has). Both empty: every group.

use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::ListGroupsRequest;

/// Kafka's `GroupType` names, as ListGroups reports them.
pub const GROUP_TYPE_CLASSIC: &str = "classic";
/// Kafka's `GroupType` name of KIP-848 consumer groups.
pub const GROUP_TYPE_CONSUMER: &str = "consumer";

/// The groups of `groups` that pass the request's filters, in group id order (Kafka lists in its
/// hash map's order).
pub fn filter_listed_groups(
    request: &ListGroupsRequest,
    groups: impl IntoIterator<Item = ListedGroup>,
) -> Vec<ListedGroup> {
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_lowercase().trim().to_owned())
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(|t| t.to_lowercase())
        .collect();
    let mut listed: Vec<ListedGroup> = groups
        .into_iter()
        .filter(|g| states.is_empty() || states.contains(&g.group_state.to_lowercase()))
        .filter(|g| types.is_empty() || types.contains(&g.group_type.to_lowercase()))
        .collect();
    listed.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
    listed
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::GroupId;
    use kafka_protocol::protocol::StrBytes;

    use super::*;

    fn group(id: &'static str, state: &'static str, group_type: &'static str) -> ListedGroup {
        ListedGroup::default()
            .with_group_id(GroupId(StrBytes::from_static_str(id)))
            .with_protocol_type(StrBytes::from_static_str("consumer"))
            .with_group_state(StrBytes::from_static_str(state))
            .with_group_type(StrBytes::from_static_str(group_type))
    }

    fn ids(request: &ListGroupsRequest) -> Vec<String> {
        let groups = [
            group("c-stable", "Stable", "consumer"),
            group("a-empty", "Empty", "classic"),
            group("b-stable", "Stable", "classic"),
            group("d-reconciling", "Reconciling", "consumer"),
        ];
        filter_listed_groups(request, groups)
            .into_iter()
            .map(|g| g.group_id.0.to_string())
            .collect()
    }

    fn strs(values: &[&'static str]) -> Vec<StrBytes> {
        values
            .iter()
            .map(|v| StrBytes::from_static_str(v))
            .collect()
    }

    #[test]
    fn filters_by_state_and_type_like_kafka() {
        let all = ListGroupsRequest::default();
        assert_eq!(
            ids(&all),
            ["a-empty", "b-stable", "c-stable", "d-reconciling"]
        );
        let stable = ListGroupsRequest::default().with_states_filter(strs(&[" STABLE "]));
        assert_eq!(ids(&stable), ["b-stable", "c-stable"]);
        let consumer = ListGroupsRequest::default().with_types_filter(strs(&["Consumer"]));
        assert_eq!(ids(&consumer), ["c-stable", "d-reconciling"]);
        let both = ListGroupsRequest::default()
            .with_types_filter(strs(&["classic"]))
            .with_states_filter(strs(&["stable", "reconciling"]));
        assert_eq!(ids(&both), ["b-stable"]);
        // An unknown type parses to `unknown`, which matches no group (types are not trimmed).
        let unknown = ListGroupsRequest::default().with_types_filter(strs(&["share", " classic"]));
        assert!(ids(&unknown).is_empty());
    }
}
