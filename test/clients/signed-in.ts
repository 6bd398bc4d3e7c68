// What every client script starts with: its input (JSON on stdin) and an ArcGISIdentityManager signed in as
// the input's user at the input's portal.
import { ArcGISIdentityManager } from "@esri/arcgis-rest-request";

export async function signedIn<T>(): Promise<{ input: T; session: ArcGISIdentityManager }> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as T & {
    portal: string;
    username: string;
    password: string;
  };
  const session = await ArcGISIdentityManager.signIn({
    username: input.username,
    password: input.password,
    portal: input.portal,
  });
  return { input, session };
}
