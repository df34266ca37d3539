//! DescribeGroups and ListGroups for classic groups (`GroupMetadataManager.describeGroups`,
//! `listGroups`, `ClassicGroup.asListedGroup`, `ClassicGroupMember.describe*`).

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DescribeGroupsRequest, DescribeGroupsResponse, GroupId, ListGroupsRequest, ListGroupsResponse,
};

use super::coordinator::{str_bytes, ClassicGroupCoordinator, ClassicResponse, RequestId};
use super::group::ClassicGroup;
use super::state::ClassicGroupState;
use crate::group::list::{filter_listed_groups, GROUP_TYPE_CLASSIC};

impl ClassicGroupCoordinator {
    /// Handles DescribeGroups. An unknown group is described as "Dead" without an error, as
    /// Kafka does; member metadata is only included once the group is Stable.
    pub fn describe_groups(
        &mut self,
        now_ms: u64,
        id: RequestId,
        _api_version: i16,
        request: &DescribeGroupsRequest,
    ) {
        self.advance(now_ms);
        let groups = request
            .groups
            .iter()
            .map(|group_id| match self.groups.get(group_id.0.as_str()) {
                Some(group) => describe(group, group_id),
                None => DescribedGroup::default()
                    .with_group_id(group_id.clone())
                    .with_group_state(ClassicGroupState::Dead.name().into()),
            })
            .collect();
        let response = DescribeGroupsResponse::default().with_groups(groups);
        self.respond(id, ClassicResponse::DescribeGroups(response));
    }

    /// Every classic group as ListGroups reports it (`ClassicGroup.asListedGroup`), unfiltered.
    pub fn listed_groups(&mut self, now_ms: u64) -> Vec<ListedGroup> {
        self.advance(now_ms);
        self.groups
            .values()
            .map(|g| {
                ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(&g.group_id)))
                    .with_protocol_type(str_bytes(g.protocol_type.as_deref().unwrap_or_default()))
                    .with_group_state(g.state().name().into())
                    .with_group_type(GROUP_TYPE_CLASSIC.into())
            })
            .collect()
    }

    /// Handles ListGroups for the classic groups alone (`list::filter_listed_groups`).
    pub fn list_groups(
        &mut self,
        now_ms: u64,
        id: RequestId,
        _api_version: i16,
        request: &ListGroupsRequest,
    ) {
        let groups = filter_listed_groups(request, self.listed_groups(now_ms));
        let response = ListGroupsResponse::default()
            .with_error_code(0)
            .with_groups(groups);
        self.respond(id, ClassicResponse::ListGroups(response));
    }
}

fn describe(group: &ClassicGroup, group_id: &GroupId) -> DescribedGroup {
    let stable_protocol = group
        .protocol_name
        .as_deref()
        .filter(|_| group.is_in(ClassicGroupState::Stable));
    let members = group
        .members
        .values()
        .map(|m| {
            let described = DescribedGroupMember::default()
                .with_member_id(str_bytes(&m.member_id))
                .with_group_instance_id(m.group_instance_id.as_deref().map(str_bytes))
                .with_client_id(str_bytes(&m.client_id))
                .with_client_host(str_bytes(&m.client_host))
                .with_member_assignment(m.assignment.clone());
            match stable_protocol {
                Some(protocol) => described.with_member_metadata(m.metadata(protocol)),
                None => described,
            }
        })
        .collect();
    DescribedGroup::default()
        .with_group_id(group_id.clone())
        .with_group_state(group.state().name().into())
        .with_protocol_type(str_bytes(
            group.protocol_type.as_deref().unwrap_or_default(),
        ))
        .with_protocol_data(str_bytes(stable_protocol.unwrap_or_default()))
        .with_members(members)
}
