-- Timers written by TimerKit 0.1.0 (commit 1f73545) to PostgreSQL: Scripts/make-schema-fixtures made this file.
--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: timerkit_now_ns(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.timerkit_now_ns() RETURNS bigint
    LANGUAGE sql
    AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint $$;


--
-- Name: timerkit_sequence; Type: SEQUENCE; Schema: public; Owner: -
--

CREATE SEQUENCE public.timerkit_sequence
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: timerkit_timers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.timerkit_timers (
    namespace text NOT NULL,
    key text NOT NULL,
    handler text NOT NULL,
    payload bytea NOT NULL,
    interval_ns bigint,
    rule text,
    misfire text NOT NULL,
    due_ns bigint NOT NULL,
    ready_at_ns bigint NOT NULL,
    sequence bigint NOT NULL,
    fire_count bigint DEFAULT 0 NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    skipped integer DEFAULT 0 NOT NULL,
    last_error text,
    parked boolean DEFAULT false NOT NULL,
    owner text,
    lease_until_ns bigint
);


--
-- Data for Name: timerkit_timers; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public.timerkit_timers VALUES ('default', 'once', 'note', '\x7b2274657874223a2264656661756c74206f6e6365227d', NULL, NULL, 'once', 1795564860000000000, 1795564860000000000, 1, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'within', 'note', '\x7b2274657874223a2264656661756c742077697468696e227d', NULL, NULL, 'within:5000000000', 1795564890000000000, 1795564890000000000, 2, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'every-10s', 'note', '\x7b2274657874223a2264656661756c74206576657279227d', 10000000000, NULL, 'skip', 1795564830000000000, 1795564830000000000, 3, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'daily-berlin', 'note', '\x7b2274657874223a2264656661756c74206461696c79227d', NULL, '{"second":0,"hour":9,"minute":0,"timeZoneIdentifier":"Europe\/Berlin"}', 'all:3', 1795766400000000000, 1795766400000000000, 4, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'batch-1', 'note', '\x7b2274657874223a2264656661756c74206231227d', NULL, NULL, 'once', 1795564920000000000, 1795564920000000000, 5, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'batch-2', 'note', '\x7b2274657874223a2264656661756c74206232227d', NULL, NULL, 'once', 1795564921000000000, 1795564921000000000, 6, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'café ☕', 'note', '\x7b2274657874223a2264656661756c7420756e69636f6465227d', NULL, NULL, 'once', 1795564930000000000, 1795564930000000000, 7, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'once', 'note', '\x7b2274657874223a226f74686572206f6e6365227d', NULL, NULL, 'once', 1795564860000000000, 1795564860000000000, 8, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'within', 'note', '\x7b2274657874223a226f746865722077697468696e227d', NULL, NULL, 'within:5000000000', 1795564890000000000, 1795564890000000000, 9, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'every-10s', 'note', '\x7b2274657874223a226f74686572206576657279227d', 10000000000, NULL, 'skip', 1795564830000000000, 1795564830000000000, 10, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'daily-berlin', 'note', '\x7b2274657874223a226f74686572206461696c79227d', NULL, '{"hour":9,"minute":0,"timeZoneIdentifier":"Europe\/Berlin","second":0}', 'all:3', 1795766400000000000, 1795766400000000000, 11, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'batch-1', 'note', '\x7b2274657874223a226f74686572206231227d', NULL, NULL, 'once', 1795564920000000000, 1795564920000000000, 12, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'batch-2', 'note', '\x7b2274657874223a226f74686572206232227d', NULL, NULL, 'once', 1795564921000000000, 1795564921000000000, 13, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('other', 'café ☕', 'note', '\x7b2274657874223a226f7468657220756e69636f6465227d', NULL, NULL, 'once', 1795564930000000000, 1795564930000000000, 14, 0, 0, 0, NULL, false, NULL, NULL);
INSERT INTO public.timerkit_timers VALUES ('default', 'parked', 'fail', '\x7b2274657874223a227061726b6564227d', NULL, NULL, 'once', 1795733641546971552, 1795733671562021000, 15, 0, 1, 0, 'Failure()', true, NULL, NULL);


--
-- Name: timerkit_sequence; Type: SEQUENCE SET; Schema: public; Owner: -
--

SELECT pg_catalog.setval('public.timerkit_sequence', 15, true);


--
-- Name: timerkit_timers timerkit_timers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.timerkit_timers
    ADD CONSTRAINT timerkit_timers_pkey PRIMARY KEY (namespace, key);


--
-- Name: timerkit_timers_ready; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX timerkit_timers_ready ON public.timerkit_timers USING btree (namespace, ready_at_ns, key) WHERE (NOT parked);


--
-- PostgreSQL database dump complete
--


