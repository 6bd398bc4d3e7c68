// GET|POST /: the home page, for anyone: what this is, signing in, the portal's directory, each server's services
// directory and the services the caller may see, each with a link to its map (f=json answers the same lists).
import { restHandler } from "#shared/http/pipeline.ts";
import { home, homePage } from "#shared/home.ts";

export const handler = restHandler({ name: "Home", html: homePage }, home);
