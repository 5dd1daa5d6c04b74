/**
 * A Slack conversation is one user in one workspace: conversationId `${team_id}:${user_id}`.
 */
export function conversationIdOf(teamId: string, userId: string): string {
  return `${teamId}:${userId}`;
}

/** The user id of a conversationId (`T1:U2` -> `U2`); throws on anything else. */
export function userIdOf(conversationId: string): string {
  const match = /^[A-Z0-9]+:([A-Z0-9]+)$/i.exec(conversationId);
  if (!match?.[1]) throw new Error(`Not a Slack conversation id: ${conversationId}`);
  return match[1];
}
